/**
 * Settings › Channels in nanobot's shapes (its webui/src/lib/api.ts is the client):
 *   GET /api/settings/nanobot-features          the channel catalog (channel-catalog.ts)
 *   settings.feature.enable / .disable {name}   switch `channels.<name>.enabled`; the reload starts or stops it
 *   settings.channel.validate {name, values}    checks the form without saving (channel-validate.ts)
 *   settings.channel.configure {name, values, enable?}   saves the form into `channels.<name>`
 *   settings.channel.connect.start/poll/cancel  a login with a code to scan (channel-connect.ts)
 * Changes go through the config access (config.json exactly as the CLI writes it, then hot reload).
 */
import { z } from 'zod';
import { DEFAULT_INSTANCE, type RegisteredChannel } from '../channels/definition.js';
import { CHANNEL_DEFINITIONS, findChannel, runtimeBlock, runtimeBlocks } from '../channels/registry.js';
import { missingSetup, setFieldValues } from '../channels/setup.js';
import type { WebUiBackend } from '../channels/websocket/backend.js';
import { UserError } from '../util/errors.js';
import { missingPackages, pinnedSpec } from '../util/on-demand.js';
import { type ActionHandler, WebuiApiError, type WebuiApiModule } from './api.js';
import { ALWAYS_ENABLED, type FeaturesPayload, featuresPayload, type LastAction } from './channel-catalog.js';
import { connectActions } from './channel-connect.js';
import { parseChannelValues } from './channel-form.js';
import { validateChannel } from './channel-validate.js';

const CHANNEL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

const featureTarget = z.looseObject({
  name: z.string({ error: 'missing feature name' }).trim().min(1, 'missing feature name').max(64),
  instance_id: z.string().max(64).optional(),
});

const channelForm = z.looseObject({
  name: z.string({ error: 'missing channel name' }).trim().min(1, 'missing channel name').max(64),
  // Checked by hand, not z.record: every own key counts (a record parse drops `__proto__` silently).
  values: z
    .custom<Record<string, unknown>>(
      (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
      'channel settings payload must be a JSON object',
    )
    .optional(),
  enable: z.union([z.boolean(), z.string()]).optional(),
  instance_id: z.string().max(64).optional(),
});

function parsePayload<T>(schema: z.ZodType<T>, payload: unknown): T {
  const result = schema.safeParse(payload);
  if (result.success) return result.data;
  throw new WebuiApiError(400, result.error.issues[0]?.message ?? 'invalid payload');
}

function access(backend: WebUiBackend) {
  const config = backend.config?.();
  if (!config) throw new WebuiApiError(503, 'the settings API needs a running gateway');
  return config;
}

export function currentFeatures(
  backend: WebUiBackend,
  extra: { lastAction?: LastAction; requiresRestart?: boolean } = {},
): FeaturesPayload {
  const health = backend.channelHealth?.() ?? healthFromStates(backend.channels());
  return featuresPayload(access(backend).loaded(), health, extra);
}

/** A backend without channel details: its plain states, no errors. */
function healthFromStates(states: Record<string, string>) {
  const health: Record<
    string,
    { state: 'running' | 'starting' | 'reconnecting' | 'stopped' | 'error'; restarts: number }
  > = {};
  for (const [name, state] of Object.entries(states)) {
    if (
      state === 'running' ||
      state === 'starting' ||
      state === 'reconnecting' ||
      state === 'stopped' ||
      state === 'error'
    ) {
      health[name] = { state, restarts: 0 };
    }
  }
  return health;
}

function channelOf(name: string): RegisteredChannel {
  const definition = CHANNEL_NAME.test(name) ? findChannel(name) : undefined;
  if (!definition) {
    const known = CHANNEL_DEFINITIONS.map((channel) => channel.name)
      .sort()
      .join(', ');
    throw new WebuiApiError(404, `Unknown feature: ${name.slice(0, 64)}. Available: ${known}`);
  }
  return definition;
}

/** nanobot's channels can run several instances; this form edits the default one (Feishu's others: config.json). */
function singleInstance(instanceId: string | undefined): void {
  const id = instanceId?.trim();
  if (id && id !== 'default') {
    throw new WebuiApiError(
      400,
      `channel instance '${id.slice(0, 64)}': nanobot-ts runs one instance per channel (default)`,
    );
  }
}

/** What stops a channel from being switched on: its SDK is missing, or its setup is incomplete or invalid. */
function enableProblem(
  definition: RegisteredChannel,
  block: Record<string, unknown>,
  home: string,
): string | undefined {
  const packages = missingPackages(definition.name, home);
  if (packages.length > 0) {
    return (
      `The ${definition.displayName} channel needs ${packages.map(pinnedSpec).join(', ')}, which is not installed: ` +
      `run \`nanobot channels install ${definition.name}\` on the gateway's machine, then enable it again.`
    );
  }
  const missing = missingSetup(definition.setup, block);
  if (missing.length > 0) {
    return `Set ${missing.map((key) => `channels.${definition.name}.${key}`).join(', ')} first (the channel's setup form).`;
  }
  try {
    definition.parse({ ...block, enabled: true });
  } catch (error) {
    if (error instanceof UserError) return [error.message, error.hint].filter(Boolean).join(' ');
    throw error;
  }
  return undefined;
}

function channelsTree(raw: Record<string, unknown>): Record<string, Record<string, unknown>> {
  if (typeof raw.channels !== 'object' || raw.channels === null || Array.isArray(raw.channels)) raw.channels = {};
  return raw.channels as Record<string, Record<string, unknown>>;
}

/** The block the form edits: `channels.<name>`, or its default instance's entry for a channel with several. */
function blockIn(raw: Record<string, unknown>, name: string): Record<string, unknown> {
  const channels = channelsTree(raw);
  const block = channels[name];
  if (typeof block !== 'object' || block === null || Array.isArray(block)) channels[name] = {};
  const section = channels[name] as Record<string, unknown>;
  return findChannel(name)?.instances?.blockIn(section, DEFAULT_INSTANCE) ?? section;
}

async function setEnabled(backend: WebUiBackend, name: string, enabled: boolean): Promise<FeaturesPayload> {
  const definition = channelOf(name);
  const config = access(backend);
  if (!enabled && ALWAYS_ENABLED.has(definition.name)) {
    throw new WebuiApiError(
      400,
      `The ${definition.displayName} channel serves this WebUI and cannot be disabled from it. ` +
        `Set channels.${definition.name}.enabled to false in config.json and restart the gateway if you need to.`,
    );
  }
  if (enabled && !ALWAYS_ENABLED.has(definition.name)) {
    const loaded = config.loaded();
    const problem = enableProblem(definition, runtimeBlocks(loaded.config)[definition.name] ?? {}, loaded.home);
    if (problem) throw new WebuiApiError(400, problem);
  }
  const { applied } = await config.update((raw) => {
    blockIn(raw, definition.name).enabled = enabled;
  });
  const verb = enabled ? 'Enabled' : 'Disabled';
  return currentFeatures(backend, {
    lastAction: {
      ok: applied,
      message: applied
        ? `${verb} channel '${definition.name}'`
        : `${verb} channel '${definition.name}' in config.json, but the gateway kept its previous config (see its log)`,
      enabled,
    },
    requiresRestart: !applied || ALWAYS_ENABLED.has(definition.name),
  });
}

const enable: ActionHandler = async ({ backend }, payload) => {
  const target = parsePayload(featureTarget, payload);
  singleInstance(target.instance_id);
  return setEnabled(backend, target.name, true);
};

const disable: ActionHandler = async ({ backend }, payload) => {
  const target = parsePayload(featureTarget, payload);
  singleInstance(target.instance_id);
  return setEnabled(backend, target.name, false);
};

const validate: ActionHandler = async ({ backend }, payload) => {
  const form = parsePayload(channelForm, payload);
  singleInstance(form.instance_id);
  const definition = channelOf(form.name);
  const block = structuredClone(runtimeBlocks(access(backend).loaded().config)[definition.name] ?? {});
  setFieldValues(block, parseChannelValues(definition, form.values ?? {}));
  return validateChannel(definition, block);
};

const configure: ActionHandler = async ({ backend }, payload) => {
  const form = parsePayload(channelForm, payload);
  singleInstance(form.instance_id);
  const definition = channelOf(form.name);
  const values = parseChannelValues(definition, form.values ?? {});
  const enableAfter =
    form.enable === true ||
    (typeof form.enable === 'string' && ['1', 'true', 'yes'].includes(form.enable.trim().toLowerCase()));
  const config = access(backend);
  const savedKeys = Object.keys(values).map((key) => `channels.${definition.name}.${key}`);
  const loaded = config.loaded();
  const merged = structuredClone(runtimeBlocks(loaded.config)[definition.name] ?? {});
  setFieldValues(merged, values);
  // A value the channel could not use (a port out of range) is refused, not saved for the channel to reject later.
  try {
    definition.checkSchema(merged);
  } catch (error) {
    if (error instanceof UserError) throw new WebuiApiError(400, error.message);
    throw error;
  }
  // Switching on needs a complete setup; saving a partial form is fine (nanobot saves, then reports the enable).
  const problem =
    enableAfter && !ALWAYS_ENABLED.has(definition.name) ? enableProblem(definition, merged, loaded.home) : undefined;
  const { applied } = await config.update((raw) => {
    const block = blockIn(raw, definition.name);
    setFieldValues(block, values);
    if (enableAfter && !problem) block.enabled = true;
  });
  if (problem) throw new WebuiApiError(400, `Settings saved, but enabling ${definition.name} failed: ${problem}`);
  return {
    name: definition.name,
    saved: true,
    saved_keys: savedKeys,
    nanobot_features: currentFeatures(backend, {
      ...(enableAfter
        ? { lastAction: { ok: applied, message: `Enabled channel '${definition.name}'`, enabled: true } }
        : {}),
      requiresRestart: !applied || ALWAYS_ENABLED.has(definition.name),
    }),
  };
};

export const settingsFeaturesModule: WebuiApiModule = {
  routes: {
    'settings/nanobot-features': async ({ backend }) => currentFeatures(backend),
  },
  actions: {
    'settings.feature.enable': enable,
    'settings.feature.disable': disable,
    'settings.channel.validate': validate,
    'settings.channel.configure': configure,
    ...connectActions({
      features: (backend) => currentFeatures(backend),
      dataDir: (backend) => access(backend).loaded().dataDir,
      block: (backend, name) => runtimeBlock(access(backend).loaded().config, name) ?? {},
      update: async (backend, mutate) => {
        await access(backend).update(mutate);
      },
    }),
  },
};
