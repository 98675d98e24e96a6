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
  /** The instance to log in, for a channel with several (`instances`); `default` when not given. */
  instance?: string;
  /** Log in again even when the setup is already complete (`nanobot channels login <name> --force`). */
  force?: boolean;
  /**
   * Changes config.json (its camelCase tree, validated and written atomically); a running gateway applies it at once
   * (the WebUI's config access) or through its file watcher (the CLI), so a channel set up this way starts by itself.
   */
  updateConfig?(mutate: (raw: Record<string, unknown>) => void): Promise<void>;
}

/** One bot of a channel that can run several in one gateway (Feishu's `channels.feishu.instances`). */
export interface ChannelInstance {
  /** `default`, or what `[A-Za-z0-9_-]{1,64}` allows; the runtime channel is `<name>.<id>` (`<name>` for default). */
  id: string;
  /** Its settings as the channel reads them (the shared keys of the section merged under its own). */
  block: Record<string, unknown>;
}

export interface ChannelInstances {
  /** The instances a `channels.<name>` section holds (a plain section is one, `default`); invalid ones are skipped. */
  list(section: unknown): { instances: ChannelInstance[]; skipped: string[] };
  /** Instance `id`'s block, also for one the section does not have yet (then only the shared keys and its id). */
  block(section: unknown, id: string): Record<string, unknown>;
  /** The object in the raw `channels.<name>` section that holds instance `id`'s own keys (created when missing). */
  blockIn(section: Record<string, unknown>, id: string): Record<string, unknown>;
}

export const DEFAULT_INSTANCE = 'default';
export const INSTANCE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The runtime channel name of an instance: the channel's own name for the default one (upstream's naming). */
export function runtimeName(channel: string, instance: string): string {
  return instance === DEFAULT_INSTANCE ? channel : `${channel}.${instance}`;
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
  /** What a login needs of the settings (default: `validate`): a login that creates the credentials needs less. */
  validateLogin?(settings: S): void;
  /** The channel can run several bots, each its own runtime channel (`<name>.<id>`). */
  instances?: ChannelInstances;
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
  instances?: ChannelInstances;
  /** `block` must parse (call `parse` first). */
  verify?(block: unknown): Promise<VerifyResult>;
  /** `block` must parse (call `parse` first). */
  statusDetail?(block: unknown, dataDir: string): string | undefined;
}

export interface ChannelBuildContext {
  /** The runtime name (`<name>.<id>` for an instance other than the default); default: the channel's name. */
  name?: string;
  /** The current `channels.<name>` block (an instance's merged block). */
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
  const loginSettings = (block: unknown): S => {
    const settings = parseChannelSettings(definition.name, block, definition.schema);
    (definition.validateLogin ?? definition.validate).call(definition, settings);
    return settings;
  };
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
      const name = context.name ?? definition.name;
      const settings = liveSettings(name, context, parse);
      const platformContext = {
        name,
        dataDir: context.dataDir,
        log: prefixedLogger(context.log, `${name}: `),
      };
      const platform = await definition.createPlatform(settings, platformContext);
      return new ChatChannel<S>({
        name,
        platform,
        settings,
        switches: context.switches,
        pairing: context.pairing,
        mediaDir: join(context.dataDir, 'media', name),
        commands: context.commands,
        log: context.log,
        ...(context.reconnectWaitMs !== undefined ? { reconnectWaitMs: context.reconnectWaitMs } : {}),
        ...(context.voice ? { voice: context.voice } : {}),
      });
    },
    ...(verify ? { verify: (block: unknown) => verify(parse(block)) } : {}),
    ...(definition.login
      ? {
          login: async (block: unknown, loginContext) => definition.login?.(loginSettings(block), loginContext),
        }
      : {}),
    ...(definition.qrLogin && definition.login ? { qrLogin: true } : {}),
    ...(definition.instances ? { instances: definition.instances } : {}),
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
