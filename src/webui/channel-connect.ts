/**
 * Settings › Channels › Connect, in nanobot's shapes (its webui/src/lib/api.ts: startChannelConnect,
 * pollChannelConnect, cancelChannelConnect): a channel whose login shows a code to scan (`qrLogin`) runs that same
 * login here, in the gateway, and the page polls it:
 *   settings.channel.connect.start  {channel, force?}       → {session_id, status, qr_url?, message?, interval_ms, expires_at_ms}
 *   settings.channel.connect.poll   {channel, session_id}   → the same, `status` pending until the login ends
 *   settings.channel.connect.cancel {channel, session_id}   → status cancelled (the login is aborted)
 * `qr_url` is the text to encode, as nanobot sends it (its page draws the code). One login per channel at a time.
 * A channel with several bots (Feishu) takes upstream's `instance_id` (default: `default`) or `mode: "create"` (a new
 * instance, `assistant-<6 hex>`); the answer names the instance. A login may save into config.json through the
 * gateway's config access, so what it set up starts at once.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { DEFAULT_INSTANCE, INSTANCE_ID, type RegisteredChannel, runtimeName } from '../channels/definition.js';
import { findChannel } from '../channels/registry.js';
import type { WebUiBackend } from '../channels/websocket/backend.js';
import { errorMessage } from '../util/errors.js';
import { silentLogger } from '../util/log.js';
import { type ActionHandler, WebuiApiError } from './api.js';
import type { FeaturesPayload } from './channel-catalog.js';

/** A login nobody finishes is ended after this long. */
const SESSION_TTL_MS = 10 * 60_000;
/** How long start waits for the first code (or the end) before answering `pending` without one. */
const FIRST_CODE_WAIT_MS = 15_000;
const POLL_INTERVAL_MS = 1_500;
const MAX_MESSAGE_CHARS = 2_000;

type ConnectStatus = 'pending' | 'succeeded' | 'expired' | 'cancelled' | 'failed';

interface ConnectSession {
  id: string;
  channel: string;
  instance: string;
  status: ConnectStatus;
  qr?: string;
  message?: string;
  expiresAt: number;
  controller: AbortController;
  /** The login is writing config.json: too late to cancel (the save finishes, the login succeeds). */
  saving?: boolean;
  /** Settles when the login has shown its first code or ended. */
  firstSign: Promise<void>;
}

const started = z.looseObject({
  channel: z.string({ error: 'missing channel' }).trim().min(1, 'missing channel').max(64),
  instance_id: z.string().max(64).optional(),
  mode: z.string().max(16).optional(),
});
const existing = started.extend({
  session_id: z.string({ error: 'missing connect session' }).trim().min(1, 'missing connect session').max(64),
});

/** Each gateway's logins (a test process can run several gateways). */
const sessionsOf = new WeakMap<WebUiBackend, Map<string, ConnectSession>>();

function sessions(backend: WebUiBackend): Map<string, ConnectSession> {
  const map = sessionsOf.get(backend) ?? new Map<string, ConnectSession>();
  sessionsOf.set(backend, map);
  return map;
}

export interface ConnectDeps {
  features(backend: WebUiBackend): FeaturesPayload;
  dataDir(backend: WebUiBackend): string;
  /** The block the login reads, by runtime name (an instance's merged block). */
  block(backend: WebUiBackend, name: string): Record<string, unknown>;
  /** Changes config.json and applies it (the settings' config access). */
  update(backend: WebUiBackend, mutate: (raw: Record<string, unknown>) => void): Promise<void>;
}

function connectable(name: string): RegisteredChannel {
  const definition = /^[A-Za-z0-9_-]{1,64}$/.test(name) ? findChannel(name) : undefined;
  if (!definition) throw new WebuiApiError(404, `Unknown channel: ${name.slice(0, 64)}`);
  if (definition.qrLogin && definition.login) return definition;
  throw new WebuiApiError(404, `channel '${definition.name}' does not support connect`);
}

/** The instance a start names: upstream's `instance_id`, or a new one for `mode: "create"`. */
function instanceOf(definition: RegisteredChannel, instanceId: string | undefined, mode: string | undefined): string {
  const instance =
    mode === 'create' ? `assistant-${randomBytes(3).toString('hex')}` : instanceId?.trim() || DEFAULT_INSTANCE;
  if (!INSTANCE_ID.test(instance)) throw new WebuiApiError(400, 'instance id must match [A-Za-z0-9_-]{1,64}');
  if (instance !== DEFAULT_INSTANCE && !definition.instances) {
    throw new WebuiApiError(400, `channel '${definition.name}' runs one instance (default)`);
  }
  return instance;
}

function payload(session: ConnectSession, deps: ConnectDeps, backend: WebUiBackend): Record<string, unknown> {
  return {
    session_id: session.id,
    instance_id: session.instance,
    status: session.status,
    ...(session.qr && session.status === 'pending' ? { qr_url: session.qr } : {}),
    ...(session.message ? { message: session.message } : {}),
    interval_ms: POLL_INTERVAL_MS,
    expires_at_ms: session.expiresAt,
    ...(session.status === 'succeeded' ? { nanobot_features: deps.features(backend) } : {}),
  };
}

/** Ends every login of this gateway whose time is up. */
function expire(map: Map<string, ConnectSession>, now = Date.now()): void {
  for (const session of map.values()) {
    if (session.status === 'pending' && now >= session.expiresAt) {
      session.status = 'expired';
      session.message = 'This login has expired. Start again.';
      session.controller.abort();
    }
    if (session.status !== 'pending' && now >= session.expiresAt) map.delete(session.id);
  }
}

function begin(
  definition: RegisteredChannel,
  instance: string,
  deps: ConnectDeps,
  backend: WebUiBackend,
): ConnectSession {
  const map = sessions(backend);
  expire(map);
  for (const other of map.values()) {
    if (
      other.channel === definition.name &&
      other.instance === instance &&
      other.status === 'pending' &&
      !other.saving
    ) {
      other.status = 'cancelled';
      other.message = 'Another login started.';
      other.controller.abort();
    }
  }
  let signal!: () => void;
  const session: ConnectSession = {
    id: randomBytes(18).toString('base64url'),
    channel: definition.name,
    instance,
    status: 'pending',
    expiresAt: Date.now() + SESSION_TTL_MS,
    controller: new AbortController(),
    firstSign: new Promise<void>((resolve) => {
      signal = resolve;
    }),
  };
  map.set(session.id, session);
  const login = definition.login;
  if (!login) throw new WebuiApiError(404, `channel '${definition.name}' does not support connect`);
  const say = (text: string) => {
    const trimmed = text.trim();
    if (trimmed) session.message = trimmed.slice(-MAX_MESSAGE_CHARS);
  };
  const name = runtimeName(definition.name, instance);
  const run = async () => {
    try {
      await login(deps.block(backend, name), {
        name,
        dataDir: deps.dataDir(backend),
        log: silentLogger,
        out: say,
        instance,
        // Connect is asked for: it logs in again even when the channel is set up.
        force: true,
        updateConfig: async (mutate) => {
          // A login cancelled (or replaced) before it ends saves nothing.
          if (session.status !== 'pending') throw new Error('login cancelled');
          session.saving = true;
          await deps.update(backend, mutate);
        },
        qr: (content) => {
          session.qr = content;
          signal();
        },
        signal: session.controller.signal,
      });
      if (session.status === 'pending') session.status = 'succeeded';
    } catch (error) {
      if (session.status !== 'pending') return;
      session.status = 'failed';
      session.message = errorMessage(error).slice(0, MAX_MESSAGE_CHARS);
    } finally {
      signal();
    }
  };
  run().catch(() => undefined);
  return session;
}

export function connectActions(deps: ConnectDeps): Record<string, ActionHandler> {
  const find = (backend: WebUiBackend, raw: unknown): ConnectSession => {
    const target = existing.safeParse(raw);
    if (!target.success) throw new WebuiApiError(400, target.error.issues[0]?.message ?? 'invalid connect request');
    connectable(target.data.channel);
    const map = sessions(backend);
    expire(map);
    const session = map.get(target.data.session_id);
    if (!session || session.channel !== target.data.channel) {
      throw new WebuiApiError(404, 'This login has expired or never existed. Start again.');
    }
    return session;
  };
  return {
    'settings.channel.connect.start': async ({ backend }, raw) => {
      const target = started.safeParse(raw);
      if (!target.success) throw new WebuiApiError(400, target.error.issues[0]?.message ?? 'invalid connect request');
      const definition = connectable(target.data.channel);
      const instance = instanceOf(definition, target.data.instance_id, target.data.mode);
      const session = begin(definition, instance, deps, backend);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        session.firstSign,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, FIRST_CODE_WAIT_MS);
        }),
      ]);
      clearTimeout(timer);
      return payload(session, deps, backend);
    },
    'settings.channel.connect.poll': async ({ backend }, raw) => payload(find(backend, raw), deps, backend),
    'settings.channel.connect.cancel': async ({ backend }, raw) => {
      const session = find(backend, raw);
      if (session.status === 'pending' && !session.saving) {
        session.status = 'cancelled';
        session.message = 'Login cancelled.';
        session.controller.abort();
      }
      return payload(session, deps, backend);
    },
  };
}
