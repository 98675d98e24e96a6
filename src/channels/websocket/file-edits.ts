/**
 * nanobot's `file_edit` rows: which file an edit tool (`write_file`, `edit_file`, `apply_patch`) is changing and
 * by how many lines. Counted from the call's own arguments, never by reading the workspace (the sandboxed shell
 * can plant links there, and this layer has no business opening files): `approximate` says when the count is a
 * guess (a whole-file write does not know what it replaced).
 */
import type { FileEditPayload } from './frames.js';

const EDIT_TOOLS = new Set(['write_file', 'edit_file', 'apply_patch']);

interface Change {
  path: string;
  added: number;
  deleted: number;
  approximate: boolean;
}

export function isFileEditTool(name: string): boolean {
  return EDIT_TOOLS.has(name);
}

/** The rows for one phase of one edit call; empty for other tools or arguments that name no file. */
export function fileEdits(
  call: { id: string; name: string; arguments: Record<string, unknown> },
  phase: FileEditPayload['phase'],
  error?: string,
): FileEditPayload[] {
  if (!EDIT_TOOLS.has(call.name)) return [];
  return changesOf(call.name, call.arguments).map((change) => ({
    version: 1,
    call_id: call.id,
    tool: call.name,
    path: change.path,
    phase,
    added: phase === 'end' ? change.added : 0,
    deleted: phase === 'end' ? change.deleted : 0,
    approximate: phase === 'start' || change.approximate,
    status: phase === 'start' ? 'editing' : phase === 'end' ? 'done' : 'error',
    ...(phase === 'error' && error ? { error: error.trim().slice(0, 240) } : {}),
  }));
}

function changesOf(tool: string, args: Record<string, unknown>): Change[] {
  if (tool === 'apply_patch') {
    const edits = Array.isArray(args.edits) ? args.edits : [];
    return edits.flatMap((edit) => (isRecord(edit) ? replacement(edit) : []));
  }
  if (tool === 'write_file') {
    const path = text(args.path);
    return path ? [{ path, added: lines(text(args.content)), deleted: 0, approximate: true }] : [];
  }
  return replacement(args, args.replace_all === true);
}

function replacement(edit: Record<string, unknown>, approximate = false): Change[] {
  const path = text(edit.path);
  if (!path) return [];
  return [{ path, added: lines(text(edit.new_text)), deleted: lines(text(edit.old_text)), approximate }];
}

function lines(value: string): number {
  if (!value) return 0;
  return value.replace(/\r\n/g, '\n').replace(/\n$/, '').split('\n').length;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
