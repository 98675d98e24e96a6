/**
 * What `doctor`, `status` and the gateway's start-up log say about a config beyond "it loads": keys it sets that
 * this version does not act on yet (unsupported.ts), and keys nobody knows (unknown-keys.ts).
 */
import { isPlainObject } from './keys.js';
import { applyEnvOverrides } from './load.js';
import { dropNulls, prepareTree } from './prepare.js';
import { detectSystemTimezone } from './timezone.js';
import { type ChannelSchemas, findUnknownKeys } from './unknown-keys.js';
import { findUnsupported } from './unsupported.js';

export interface ConfigNotice {
  kind: 'unsupported' | 'unknown' | 'overridden';
  path: string;
  /** One line, e.g. "not supported in this version: tools.my (enable) — the self-inspection tool …". */
  text: string;
}

/**
 * Notices for the file's tree (`LoadedConfig.raw`) with the NANOBOT_… environment overrides applied. Pass the
 * channels' schemas (`channelSchemas()` of src/channels/registry.ts) to have typos inside channel blocks named too.
 */
export function configNotices(
  raw: Record<string, unknown>,
  env: NodeJS.ProcessEnv = {},
  systemTimezone: () => string = detectSystemTimezone,
  channelSchemas: ChannelSchemas = {},
): ConfigNotice[] {
  const applied = applyEnvOverrides(raw, env).tree;
  const tree = prepareTree(applied, { systemTimezone });
  const notices: ConfigNotice[] = findUnsupported(tree).map((finding) => ({
    kind: 'unsupported',
    path: finding.path,
    text: `not supported in this version: ${finding.path}${finding.keys.length ? ` (${finding.keys.join(', ')})` : ''} — ${finding.reason}`,
  }));
  for (const unknown of findUnknownKeys(tree, channelSchemas)) {
    notices.push({
      kind: 'unknown',
      path: unknown.path,
      text: `unknown key ${unknown.path}, ignored${unknown.suggestion ? ` — did you mean \`${unknown.suggestion}\`?` : ''}`,
    });
  }
  const zone = overriddenTimezone(applied, systemTimezone());
  if (zone) notices.push(zone);
  return notices;
}

/** `timezone` written while `timezoneMode` is "auto": upstream (and so this version) uses the system's zone. */
function overriddenTimezone(tree: Record<string, unknown>, system: string): ConfigNotice | undefined {
  const defaults = isPlainObject(tree.agents) ? dropNulls(tree.agents.defaults) : undefined;
  if (!isPlainObject(defaults) || defaults.timezoneMode !== 'auto') return undefined;
  const written = defaults.timezone;
  if (typeof written !== 'string' || written === system) return undefined;
  return {
    kind: 'overridden',
    path: 'agents.defaults.timezone',
    text: `agents.defaults.timezone "${written}" is not used: timezoneMode is "auto", so the system's zone (${system}) is; set timezoneMode to "manual" to use it`,
  };
}
