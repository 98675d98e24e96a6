/**
 * What `doctor`, `status` and the gateway's start-up log say about a config beyond "it loads": keys it sets that
 * this version does not act on yet (unsupported.ts), and keys nobody knows (unknown-keys.ts).
 */
import { applyEnvOverrides } from './load.js';
import { prepareTree } from './prepare.js';
import { findUnknownKeys } from './unknown-keys.js';
import { findUnsupported } from './unsupported.js';

export interface ConfigNotice {
  kind: 'unsupported' | 'unknown';
  path: string;
  /** One line, e.g. "not supported in this version: tools.my (enable) — the self-inspection tool …". */
  text: string;
}

/** Notices for the file's tree (`LoadedConfig.raw`) with the NANOBOT_… environment overrides applied. */
export function configNotices(raw: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): ConfigNotice[] {
  const tree = prepareTree(applyEnvOverrides(raw, env).tree, { systemTimezone: () => 'UTC' });
  const notices: ConfigNotice[] = findUnsupported(tree).map((finding) => ({
    kind: 'unsupported',
    path: finding.path,
    text: `not supported in this version: ${finding.path}${finding.keys.length ? ` (${finding.keys.join(', ')})` : ''} — ${finding.reason}`,
  }));
  for (const unknown of findUnknownKeys(tree)) {
    notices.push({
      kind: 'unknown',
      path: unknown.path,
      text: `unknown key ${unknown.path}, ignored${unknown.suggestion ? ` — did you mean \`${unknown.suggestion}\`?` : ''}`,
    });
  }
  return notices;
}
