/**
 * How a chat platform describes itself to the framework: its settings schema, the credentials it needs, and a
 * factory for its ChatPlatform adapter. `defineChannel` turns that into a RegisteredChannel the registry lists.
 */
import { join } from 'node:path';
import type { z } from 'zod';
import type { VoiceService } from '../providers/voice.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { Channel } from './channel.js';
import { ChatChannel, prefixedLogger } from './chat-channel.js';
import type { PairingStore } from './pairing.js';
import type { ChatPlatform, CommandInfo } from './platform.js';
import { type ChannelSettings, type DeliverySwitches, parseChannelSettings } from './settings.js';
import { type ChannelSetup, credentialKeys } from './setup.js';

/** What a platform's factory gets besides its settings. */
export interface PlatformContext {
  name: string;
  dataDir: string;
  log: Logger;
}

/**
 * What an interactive login gets: the CLI (`nanobot channels login`) and the WebUI's Connect button run the same
 * login. `out` says what to do next; `qr` hands over a code to scan (the terminal draws it, the WebUI shows it as an
 * image; called again when the platform rotates it); `signal` ends the login when the person gives up.
 */
export interface LoginContext extends PlatformContext {
  out(text: string): void;
  qr?(content: string): void;
  signal?: AbortSignal;
}

export interface ChannelDefinition<S extends ChannelSettings> {
  /** The key under `channels` and the `channel` of its bus messages. */
  name: string;
  displayName: string;
  /** `channelSettingsSchema.extend({...})` with the platform's keys and nanobot's defaults. */
  schema: z.ZodType<S>;
  /** The keys a person fills in to connect it (setup.ts): the CLI and the WebUI's channel form both read it. */
  setup: ChannelSetup;
  /** Where to get the credentials, one sentence. */
  setupHint: string;
  /** Throws a UserError for what stops the channel from starting (a missing token): checked before anything starts. */
  validate(settings: S): void;
  /** Builds the adapter; imports the platform SDK here (throw `missingSdk(...)` when it is not installed). */
  createPlatform(settings: () => S, context: PlatformContext): Promise<ChatPlatform>;
  /** An interactive login (QR code…), for platforms that need one. */
  login?(settings: S, context: LoginContext): Promise<void>;
  /** The login shows a code to scan: the WebUI's channel card offers Connect, which runs `login` with a QR. */
  qrLogin?: boolean;
  /** Asks the platform (at the configured endpoint) whether the credentials work; for the WebUI's "check" button. */
  verify?(settings: S): Promise<VerifyResult>;
  /** One more line for `nanobot channels status` (e.g. the state of an encryption device), read from the data dir. */
  statusDetail?(settings: S, dataDir: string): string | undefined;
}

/** One check of a channel's credentials against its platform. */
export interface VerifyResult {
  status: 'pass' | 'fail' | 'warn' | 'skipped';
  message: string;
  /** Who the credentials belong to (the bot's name and id). */
  identity?: { name?: string; account?: string };
}

/** A definition with its settings type erased, so definitions of different platforms fit in one list. */
export interface RegisteredChannel {
  name: string;
  displayName: string;
  /** The setup fields marked `credential` (what `nanobot channels login` names). */
  credentials: string[];
  setup: ChannelSetup;
  setupHint: string;
  /** The settings schema (its keys are the ones this channel reads: config notices name any other). */
  schema: z.ZodType;
  /** Parses and validates `channels.<name>` (a UserError naming the keys). */
  parse(block: unknown): ChannelSettings;
  /** Only the schema's check of `channels.<name>` (types, ranges), not whether the setup is complete. */
  checkSchema(block: unknown): void;
  /** Builds the Channel; `block()` is read again on every use, so a config reload applies. */
  create(context: ChannelBuildContext): Promise<Channel>;
  login?(block: unknown, context: LoginContext): Promise<void>;
  qrLogin?: boolean;
  /** `block` must parse (call `parse` first). */
  verify?(block: unknown): Promise<VerifyResult>;
  /** `block` must parse (call `parse` first). */
  statusDetail?(block: unknown, dataDir: string): string | undefined;
}

export interface ChannelBuildContext {
  /** The current `channels.<name>` block. */
  block: () => unknown;
  switches: () => DeliverySwitches;
  pairing: PairingStore;
  dataDir: string;
  log: Logger;
  commands: () => readonly CommandInfo[];
  reconnectWaitMs?: number;
  /** Speech-to-text and spoken replies, shared by every channel (built once from `transcription` and `tts`). */
  voice?: VoiceService;
}

export function defineChannel<S extends ChannelSettings>(definition: ChannelDefinition<S>): RegisteredChannel {
  const parse = (block: unknown): S => {
    const settings = parseChannelSettings(definition.name, block, definition.schema);
    definition.validate(settings);
    return settings;
  };
  const verify = definition.verify?.bind(definition);
  return {
    name: definition.name,
    displayName: definition.displayName,
    credentials: credentialKeys(definition.setup),
    setup: definition.setup,
    setupHint: definition.setupHint,
    schema: definition.schema,
    parse,
    checkSchema: (block) => {
      parseChannelSettings(definition.name, block, definition.schema);
    },
    async create(context) {
      const settings = liveSettings(definition.name, context, parse);
      const platformContext = {
        name: definition.name,
        dataDir: context.dataDir,
        log: prefixedLogger(context.log, `${definition.name}: `),
      };
      const platform = await definition.createPlatform(settings, platformContext);
      return new ChatChannel<S>({
        name: definition.name,
        platform,
        settings,
        switches: context.switches,
        pairing: context.pairing,
        mediaDir: join(context.dataDir, 'media', definition.name),
        commands: context.commands,
        log: context.log,
        ...(context.reconnectWaitMs !== undefined ? { reconnectWaitMs: context.reconnectWaitMs } : {}),
        ...(context.voice ? { voice: context.voice } : {}),
      });
    },
    ...(verify ? { verify: (block: unknown) => verify(parse(block)) } : {}),
    ...(definition.login
      ? { login: (block: unknown, loginContext) => definition.login?.(parse(block), loginContext) ?? Promise.resolve() }
      : {}),
    ...(definition.qrLogin && definition.login ? { qrLogin: true } : {}),
    ...(definition.statusDetail
      ? { statusDetail: (block: unknown, dataDir: string) => definition.statusDetail?.(parse(block), dataDir) }
      : {}),
  };
}

/** Settings re-parsed when the block changes; an invalid edit keeps the last good settings (and says so once). */
export function liveSettings<S>(name: string, context: ChannelBuildContext, parse: (block: unknown) => S): () => S {
  let lastText = JSON.stringify(context.block() ?? {});
  let last = parse(context.block());
  return () => {
    const text = JSON.stringify(context.block() ?? {});
    if (text === lastText) return last;
    lastText = text;
    try {
      last = parse(context.block());
      context.log.info(`channel ${name}: settings reloaded`);
    } catch (err) {
      context.log.warn(`channel ${name}: config edit ignored, keeping the previous settings: ${errorMessage(err)}`);
    }
    return last;
  };
}
