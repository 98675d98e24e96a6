/**
 * nanobot's channel catalog (`NanobotFeaturesPayload` of its webui/src/lib/types.ts): every channel this build has,
 * with its setup contract (from the channel's own setup description, src/channels/setup.ts), what is saved (secrets
 * only as "configured", never their values), whether it is enabled, and the gateway's live state of it.
 */

import type { RegisteredChannel } from '../channels/definition.js';
import type { ChannelHealth } from '../channels/manager.js';
import { CHANNEL_DEFINITIONS, runtimeBlocks } from '../channels/registry.js';
import { fieldValue, isSetValue, type SetupField, setupComplete } from '../channels/setup.js';
import type { LoadedConfig } from '../config/load.js';
import { missingPackages } from '../util/on-demand.js';

/** The channel serving the WebUI: nanobot's WebUI cannot switch it off (`always_enabled`). */
export const ALWAYS_ENABLED = new Set(['websocket']);

export interface LastAction {
  ok: boolean;
  message: string;
  enabled?: boolean;
}

export interface FeaturesPayload {
  features: Record<string, unknown>[];
  enabled_count: number;
  requires_restart?: boolean;
  last_action?: LastAction;
}

/** nanobot's form of a saved value: booleans as true/false, lists comma-separated. */
export function stringifyValue(value: unknown): string {
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return value.map(String).join(', ');
  return String(value);
}

/** nanobot's `ChannelSetupContract`, plus our label and help text per field (its WebUI ignores what it does not read). */
export function setupContract(definition: RegisteredChannel): Record<string, unknown> {
  const fields = definition.setup.fields.map((field) => ({
    key: `channels.${definition.name}.${field.key}`,
    field: field.key,
    kind: field.kind,
    choices: [...(field.choices ?? [])].sort(),
    required: field.required === true,
    ...(field.defaultValue !== undefined ? { default_value: stringifyValue(field.defaultValue) } : {}),
    label: field.label,
    help: field.help,
  }));
  return {
    fields,
    ...(definition.setup.officialUrl ? { official_url: definition.setup.officialUrl } : {}),
    ...(definition.setup.oneOf ? { one_of: definition.setup.oneOf.map((keys) => [...keys]) } : {}),
  };
}

export function featuresPayload(
  loaded: LoadedConfig,
  health: Readonly<Record<string, ChannelHealth>>,
  extra: { lastAction?: LastAction; requiresRestart?: boolean } = {},
): FeaturesPayload {
  // A channel with several bots shows its default one.
  const blocks = runtimeBlocks(loaded.config);
  const features = [...CHANNEL_DEFINITIONS]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((definition) => channelFeature(definition, blocks[definition.name] ?? {}, health[definition.name], loaded));
  return {
    features,
    enabled_count: features.filter((feature) => feature.running === true).length,
    ...(extra.requiresRestart !== undefined ? { requires_restart: extra.requiresRestart } : {}),
    ...(extra.lastAction ? { last_action: extra.lastAction } : {}),
  };
}

function channelFeature(
  definition: RegisteredChannel,
  block: Readonly<Record<string, unknown>>,
  health: ChannelHealth | undefined,
  loaded: LoadedConfig,
): Record<string, unknown> {
  const enabled = block.enabled === true;
  const installed = missingPackages(definition.name, loaded.home).length === 0;
  const { setup } = definition;
  const requires = setup.fields.some((field) => field.required) || (setup.oneOf ?? []).length > 0;
  const { values, configured } = snapshot(definition.name, setup.fields, block);
  const runtime = runtimeState(enabled, health);
  return {
    name: definition.name,
    display_name: definition.displayName,
    // `qr_connect`: Connect runs the channel's login and shows its code (channel-connect.ts).
    capabilities: [
      ...(ALWAYS_ENABLED.has(definition.name) ? ['always_enabled'] : []),
      ...(definition.qrLogin ? ['qr_connect'] : []),
    ],
    settings_visible: true,
    type: 'channel',
    enabled,
    running: runtime.state === 'running',
    runtime_status: runtime.state,
    ...(runtime.error ? { runtime_error: runtime.error } : {}),
    configured: requires ? setupComplete(setup, block) : enabled,
    ...(Object.keys(values).length > 0 ? { config_values: values } : {}),
    ...(configured.length > 0 ? { configured_fields: configured } : {}),
    setup: setupContract(definition),
    installed,
    ready: runtime.state === 'running',
    status: runtime.state === 'running' ? 'enabled' : !installed ? 'missing_dependency' : runtime.state,
    // Installing platform SDKs is `nanobot channels install <name>` on the gateway's machine, not a WebUI action.
    install_supported: false,
    // A reload starts and stops channels (src/app/gateway-channels.ts), except the one serving the WebUI.
    requires_restart: ALWAYS_ENABLED.has(definition.name),
  };
}

/** What is saved: values of the plain fields, and the keys of every field that is set (secrets included). */
function snapshot(
  name: string,
  fields: readonly SetupField[],
  block: Readonly<Record<string, unknown>>,
): { values: Record<string, string>; configured: string[] } {
  const values: Record<string, string> = {};
  const configured: string[] = [];
  for (const field of fields) {
    const value = fieldValue(block, field.key);
    if (!isSetValue(value)) continue;
    const key = `channels.${name}.${field.key}`;
    configured.push(key);
    if (field.kind !== 'secret') values[key] = stringifyValue(value);
  }
  return { values, configured };
}

/**
 * nanobot's runtime states: running, starting, failed, stopped. A channel enabled in the config with nothing
 * running for it failed to start (the gateway log says why); one waiting out a reconnect is starting again.
 */
function runtimeState(enabled: boolean, health: ChannelHealth | undefined): { state: string; error?: string } {
  if (!health) {
    return enabled
      ? { state: 'failed', error: 'Enabled channel has no runtime. Check gateway logs.' }
      : { state: 'stopped' };
  }
  const error = health.error ? { error: health.error } : {};
  switch (health.state) {
    case 'running':
      return { state: 'running' };
    case 'starting':
    case 'reconnecting':
      return { state: 'starting', ...error };
    case 'error':
      return { state: 'failed', ...error };
    default:
      return { state: 'stopped', ...error };
  }
}
