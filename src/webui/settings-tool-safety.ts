/**
 * `settings.tool_safety.update` (nanobot-ts only; nanobot's WebUI has no such form): the exec sandbox mode
 * (`tools.exec.sandbox`), the workspace restriction (`tools.restrictToWorkspace`) and the SSRF whitelist
 * (`tools.ssrfWhitelist`). The payload is read strictly (a boolean is `true`/`false`, never "false" or 0; a sandbox
 * mode is one of auto, bwrap, none), whitelist entries are checked by the SSRF guard itself, and a change that makes
 * tools less confined (sandbox off or weaker, the restriction off, a new whitelisted range) is refused with a 409
 * unless the payload says `confirm_weaker: true` — so no payload turns a protection off silently. The answer is the
 * fresh SettingsPayload (its `advanced` section).
 */
import { z } from 'zod';
import { createNetworkPolicy } from '../security/network.js';
import { tooBroadWhitelistEntry } from '../security/ssrf-whitelist.js';
import type { ActionHandler } from './api.js';
import { WebuiApiError } from './api.js';
import { configOf, objectAt, writeAndAnswer } from './settings-write.js';

const MAX_ENTRIES = 64;
/** Confinement of each mode, weakest first: `auto` falls back to no sandbox where bubblewrap is missing. */
const SANDBOX_STRENGTH = { none: 0, auto: 1, bwrap: 2 } as const;
type SandboxMode = keyof typeof SANDBOX_STRENGTH;

const payloadSchema = z.looseObject({
  restrict_to_workspace: z.boolean({ error: 'restrict_to_workspace must be true or false' }).optional(),
  exec_sandbox: z
    .enum(['auto', 'bwrap', 'none'], { error: 'exec_sandbox must be one of auto, bwrap, none' })
    .optional(),
  ssrf_whitelist: z
    .array(
      z.string({ error: 'ssrf_whitelist entries must be strings' }).max(64, 'an ssrf_whitelist entry is too long'),
      {
        error: 'ssrf_whitelist must be a list of IP addresses or CIDR ranges',
      },
    )
    .max(MAX_ENTRIES, `ssrf_whitelist holds at most ${MAX_ENTRIES} entries`)
    .optional(),
  confirm_weaker: z.literal(true, { error: 'confirm_weaker must be true when given' }).optional(),
});

/** The config's mode as one of the three (nanobot writes "" for none). */
const modeOf = (written: string): SandboxMode => (written === '' ? 'none' : (written as SandboxMode));

/** Trimmed, duplicates dropped; each must be an address or CIDR the SSRF guard accepts, and none too broad. */
function whitelistEntries(entries: readonly string[]): string[] {
  const out = [...new Set(entries.map((entry) => entry.trim()).filter(Boolean))];
  try {
    createNetworkPolicy({ whitelist: out });
  } catch (error) {
    throw new WebuiApiError(400, (error as Error).message);
  }
  for (const entry of out) {
    const why = tooBroadWhitelistEntry(entry);
    if (why) {
      throw new WebuiApiError(
        400,
        `tools.ssrfWhitelist: '${entry}' is too broad (${why}) and would switch most of the SSRF guard off; name the hosts or ranges to allow`,
      );
    }
  }
  return out;
}

const updateToolSafety: ActionHandler = async (context, payload) => {
  const parsed = payloadSchema.safeParse(payload);
  if (!parsed.success) throw new WebuiApiError(400, parsed.error.issues[0]?.message ?? 'invalid payload');
  const { restrict_to_workspace: restrict, exec_sandbox: sandbox, ssrf_whitelist: list } = parsed.data;
  if (restrict === undefined && sandbox === undefined && list === undefined) {
    throw new WebuiApiError(400, 'nothing to change: give restrict_to_workspace, exec_sandbox or ssrf_whitelist');
  }
  const whitelist = list === undefined ? undefined : whitelistEntries(list);
  const { tools } = configOf(context).loaded().config;
  const weaker: string[] = [];
  if (restrict === false && tools.restrictToWorkspace) weaker.push('tools would no longer be kept in the workspace');
  const current = modeOf(tools.exec.sandbox);
  if (sandbox !== undefined && SANDBOX_STRENGTH[sandbox] < SANDBOX_STRENGTH[current]) {
    weaker.push(`the exec sandbox would go from ${current} to ${sandbox}`);
  }
  const added = (whitelist ?? []).filter((entry) => !tools.ssrfWhitelist.includes(entry));
  if (added.length > 0) weaker.push(`tools could reach ${added.join(', ')}`);
  if (weaker.length > 0 && parsed.data.confirm_weaker !== true) {
    throw new WebuiApiError(
      409,
      `This loosens tool safety (${weaker.join('; ')}): confirm it to save. Nothing was saved.`,
    );
  }
  return writeAndAnswer(context, (tree) => {
    const toolsTree = objectAt(tree, 'tools');
    if (restrict !== undefined) toolsTree.restrictToWorkspace = restrict;
    if (sandbox !== undefined) objectAt(toolsTree, 'exec').sandbox = sandbox;
    if (whitelist !== undefined) toolsTree.ssrfWhitelist = whitelist;
  });
};

export const toolSafetyActions: Record<string, ActionHandler> = {
  'settings.tool_safety.update': updateToolSafety,
};
