/** The built-in tool set and the tools layer's public API. */

import type { NetworkPolicy } from '../security/network.js';
import { createPathPolicy } from '../security/workspace.js';
import { createExecTool, type ExecToolOptions } from './exec.js';
import { createListExecSessionsTool, createWriteStdinTool, type ExecSessionManager } from './exec-sessions.js';
import { createApplyPatchTool } from './filesystem/apply-patch.js';
import { createEditFileTool } from './filesystem/edit-file.js';
import { createListDirTool } from './filesystem/list-dir.js';
import { createReadFileTool } from './filesystem/read-file.js';
import { createWriteFileTool } from './filesystem/write-file.js';
import { createFindFilesTool, createGrepTool } from './search/index.js';
import type { Tool } from './types.js';

export interface DefaultToolsOptions {
  workspace: string;
  /** nanobot-ts defaults this to true; the caller (config) decides. */
  restrictToWorkspace: boolean;
  /** `tools.file.enable`: the read/write/edit/list tools (default true). */
  fileTools?: boolean;
  /** `tools.exec` (timeouts, env, patterns, sandbox); `enable` defaults to true. */
  exec: Omit<ExecToolOptions, 'policy' | 'sessions' | 'network'> & { enable?: boolean };
  /** Background exec sessions; with it, exec offers `yield_time_ms` and write_stdin/list_exec_sessions exist. */
  sessions?: ExecSessionManager;
  /** Judges URLs named in exec commands. */
  network?: NetworkPolicy;
  /** Readable even when restricted (e.g. built-in skills). */
  extraReadDirs?: string[];
  /** Readable, never writable (e.g. the media dir). */
  readOnlyDirs?: string[];
}

export function createDefaultTools(opts: DefaultToolsOptions): Tool[] {
  const policy = createPathPolicy({
    workspace: opts.workspace,
    restrictToWorkspace: opts.restrictToWorkspace,
    ...(opts.extraReadDirs ? { extraReadDirs: opts.extraReadDirs } : {}),
    ...(opts.readOnlyDirs ? { readOnlyDirs: opts.readOnlyDirs } : {}),
  });
  const tools: Tool[] =
    opts.fileTools === false
      ? []
      : [
          createReadFileTool({ policy }),
          createWriteFileTool({ policy }),
          createEditFileTool({ policy }),
          createApplyPatchTool({ policy }),
          createListDirTool({ policy }),
          createGrepTool({ policy }),
          createFindFilesTool({ policy }),
        ];
  if (opts.exec.enable !== false) {
    const { enable: _enable, ...execOptions } = opts.exec;
    const { sessions, network } = opts;
    tools.push(
      createExecTool({ policy, ...execOptions, ...(sessions ? { sessions } : {}), ...(network ? { network } : {}) }),
    );
    if (sessions) tools.push(createWriteStdinTool({ sessions }), createListExecSessionsTool({ sessions }));
  }
  return tools;
}

export { createExecTool, type ExecToolOptions } from './exec.js';
export {
  createExecSessionManager,
  createListExecSessionsTool,
  createWriteStdinTool,
  type ExecSessionManager,
} from './exec-sessions.js';
export { createApplyPatchTool } from './filesystem/apply-patch.js';
export { createEditFileTool, type EditFileToolOptions } from './filesystem/edit-file.js';
export { createListDirTool, type ListDirToolOptions } from './filesystem/list-dir.js';
export { createReadFileTool, type ReadFileToolOptions } from './filesystem/read-file.js';
export { createWriteFileTool, type WriteFileToolOptions } from './filesystem/write-file.js';
export { DEFAULT_MAX_RESULT_CHARS, ERROR_RECOVERY_HINT, ToolRegistry, type ToolRegistryOptions } from './registry.js';
export { createFindFilesTool, createGrepTool } from './search/index.js';
export * from './types.js';
