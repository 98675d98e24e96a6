/**
 * Dream's restricted tool set: read_file anywhere in the workspace; edit_file and write_file only on SOUL.md, USER.md,
 * memory/MEMORY.md and skills/<name>/SKILL.md (never history.jsonl, the cursor, sessions or git internals); and a
 * shrink guard, because a truncated memory update once cut MEMORY.md from 10 KB to 171 bytes.
 */

import path from 'node:path';
import { z } from 'zod';
import {
  createPathPolicy,
  isPathInside,
  type PathPolicy,
  type PathResolution,
  realpathNearest,
} from '../security/workspace.js';
import { WorkspaceFs } from '../security/workspace-fs.js';
import { createEditFileTool } from '../tools/filesystem/edit-file.js';
import { createReadFileTool } from '../tools/filesystem/read-file.js';
import { createWriteFileTool } from '../tools/filesystem/write-file.js';
import { ToolRegistry } from '../tools/registry.js';
import { type AnyToolSchema, defineTool, fail, type Tool } from '../tools/types.js';
import { DREAM_CURSOR_PATH, isSkillFile, MEMORY_FILES } from './git.js';

/** Files smaller than this are never guarded: rewriting a near-empty template is normal. */
export const SHRINK_GUARD_MIN_BYTES = 256;

export const DREAM_WRITABLE_DESCRIPTION = 'SOUL.md, USER.md, memory/MEMORY.md and skills/<name>/SKILL.md';

/** True for workspace-relative POSIX paths Dream may write. */
export function isDreamWritable(relative: string): boolean {
  return (MEMORY_FILES as readonly string[]).includes(relative) || isSkillFile(relative);
}

/** Workspace-relative POSIX path of a resolved real path, or undefined when it is outside the workspace. */
function relativeTo(workspace: string, real: string): string | undefined {
  const root = realpathNearest(workspace);
  if (!isPathInside(real, root)) return undefined;
  return path.relative(root, real).split(path.sep).join('/');
}

/**
 * Wraps a workspace-restricted policy so that writes reach only Dream's files. Directories on the way to them stay
 * writable when they exist, because the atomic writer re-checks the target's directory against the policy.
 */
export function createDreamWritePolicy(base: PathPolicy): PathPolicy {
  const resolve = (input: string, access: 'read' | 'write'): PathResolution => {
    const resolved = base.resolve(input, access);
    if (!resolved.ok || access === 'read') return resolved;
    const relative = relativeTo(base.workspace, resolved.path);
    if (relative !== undefined && isDreamWritable(relative)) return resolved;
    if (relative !== undefined && isDirectoryOnTheWay(relative) && isDirectory(base.workspace, relative))
      return resolved;
    const internal =
      relative === DREAM_CURSOR_PATH || relative === 'memory/history.jsonl'
        ? ' It is managed by nanobot; editing it by hand corrupts memory.'
        : '';
    return {
      ok: false,
      error: `Error: Dream may only write ${DREAM_WRITABLE_DESCRIPTION}; '${input}' is not one of them.${internal}`,
    };
  };
  return { workspace: base.workspace, restrictToWorkspace: true, resolve };
}

const isDirectoryOnTheWay = (relative: string): boolean =>
  relative === '' || relative === 'memory' || relative === 'skills' || relative.startsWith('skills/');

function isDirectory(workspace: string, relative: string): boolean {
  try {
    return relative === '' || (new WorkspaceFs(workspace).lstatSync(relative)?.isDirectory() ?? false);
  } catch {
    return false;
  }
}

const confirmShrinkParameter = z
  .boolean()
  .optional()
  .describe('Set true only when you really mean to remove more than half of SOUL.md, USER.md or MEMORY.md.');

/**
 * Refuses a write or edit that leaves a memory file at less than half the size it had when this Dream began, unless
 * the model passes `confirm_shrink: true`. Measured against the run's starting size, so a file cannot be whittled
 * away in several smaller cuts. An edit's result is only known after it ran, so a refused edit is rolled back.
 */
export function withShrinkGuard(tool: Tool, policy: PathPolicy): Tool {
  const startSizes = new Map<string, number>();
  const parameters: AnyToolSchema = tool.parameters.extend({ confirm_shrink: confirmShrinkParameter });
  return defineTool({
    name: tool.name,
    description: `${tool.description} Cutting a memory file to less than half its size needs confirm_shrink: true.`,
    parameters,
    async execute(args, ctx) {
      const { confirm_shrink: confirmed, ...rest } = args as Record<string, unknown>;
      const target = typeof rest.path === 'string' ? policy.resolve(rest.path, 'write') : undefined;
      const relative = target?.ok ? relativeTo(policy.workspace, target.path) : undefined;
      if (!target?.ok || !relative || !(MEMORY_FILES as readonly string[]).includes(relative) || confirmed === true) {
        return tool.execute(rest, ctx);
      }
      // The guard's own reads and rollback go through the workspace-file layer (never a link out).
      const wfs = new WorkspaceFs(policy.workspace);
      const before = await wfs.readFile(relative).catch(() => undefined);
      const startSize = startSizes.get(relative) ?? before?.length ?? 0;
      startSizes.set(relative, startSize);
      const refusal = (newSize: number) =>
        fail(
          `Refused: this would shrink ${relative} from ${startSize} to ${newSize} bytes, losing more than half of it. ` +
            'Memory must not lose information: merge, dedupe and correct instead of dropping. If you really mean to ' +
            'remove that much (e.g. it was duplicated or moved to another file), repeat the call with confirm_shrink: true.',
        );
      if (typeof rest.content === 'string' && isDrasticShrink(startSize, Buffer.byteLength(rest.content))) {
        return refusal(Buffer.byteLength(rest.content));
      }
      const result = await tool.execute(rest, ctx);
      if (result.isError) return result;
      const after = await wfs.readFile(relative).catch(() => undefined);
      if (after === undefined || !isDrasticShrink(startSize, after.length)) return result;
      if (before === undefined) await wfs.rm(relative);
      else await wfs.writeFileAtomic(relative, before);
      return refusal(after.length);
    },
  });
}

export function isDrasticShrink(startSize: number, newSize: number): boolean {
  return startSize >= SHRINK_GUARD_MIN_BYTES && newSize * 2 < startSize;
}

/** A fresh registry per Dream run (the shrink guard remembers sizes for one run). */
export function createDreamToolRegistry(workspace: string): ToolRegistry {
  const base = createPathPolicy({ workspace, restrictToWorkspace: true });
  const writePolicy = createDreamWritePolicy(base);
  const registry = new ToolRegistry();
  registry.register(createReadFileTool({ policy: base }));
  registry.register(withShrinkGuard(createEditFileTool({ policy: writePolicy }), writePolicy));
  registry.register(withShrinkGuard(createWriteFileTool({ policy: writePolicy }), writePolicy));
  return registry;
}
