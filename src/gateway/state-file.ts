/**
 * `<dataDir>/gateway.json`: how `nanobot gateway status|stop|logs` find the running gateway.
 * Written atomically at start, removed at a clean exit; a file whose pid is dead is stale and ignored.
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { errorMessage } from '../util/errors.js';
import { parseJsonAs } from '../util/json.js';

export interface GatewayState {
  pid: number;
  host: string;
  port: number;
  startedAt: string;
  logFile: string;
  configPath: string;
  /** Bearer token for the gateway's control routes (`nanobot cron run`); the file is 0600. */
  controlToken?: string;
  /** How it was started: `background` by `nanobot gateway --background` (or `webui`); absent in older files. */
  launchMode?: 'foreground' | 'background';
}

export function stateFilePath(dataDir: string): string {
  return join(dataDir, 'gateway.json');
}

export function logFilePath(dataDir: string): string {
  return join(dataDir, 'logs', 'gateway.log');
}

const StateFile = z.looseObject({
  pid: z.int().positive(),
  port: z.int().nonnegative(),
  host: z.string().optional(),
  startedAt: z.string().optional(),
  logFile: z.string().optional(),
  configPath: z.string().optional(),
  controlToken: z.string().optional(),
  launchMode: z.enum(['foreground', 'background']).optional().catch(undefined),
});

/**
 * The running gateway's state, or undefined when there is none. A damaged file is reported through `warn` (its path
 * and what is wrong) and then read as "no gateway", as before: the next start replaces it.
 */
export function readState(
  dataDir: string,
  warn: (problem: string) => void = (problem) => process.stderr.write(`[warn] ${problem}\n`),
): GatewayState | undefined {
  const path = stateFilePath(dataDir);
  if (!existsSync(path)) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    warn(`gateway state file ${path} cannot be read: ${errorMessage(error)}; ignored`);
    return undefined;
  }
  const parsed = parseJsonAs(text, StateFile, `gateway state file ${path}`);
  if (!parsed.ok) {
    warn(`${parsed.problem}; ignored (a gateway start rewrites it)`);
    return undefined;
  }
  const state = parsed.value;
  return {
    pid: state.pid,
    port: state.port,
    host: state.host ?? '127.0.0.1',
    startedAt: state.startedAt ?? '',
    logFile: state.logFile ?? logFilePath(dataDir),
    configPath: state.configPath ?? '',
    ...(state.controlToken ? { controlToken: state.controlToken } : {}),
    ...(state.launchMode ? { launchMode: state.launchMode } : {}),
  };
}

export function writeState(dataDir: string, state: GatewayState): void {
  const path = stateFilePath(dataDir);
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(temp, path);
}

/** Removes the state file if it still describes `pid` (a newer gateway may have replaced it). */
export function removeState(dataDir: string, pid = process.pid): void {
  if (readState(dataDir)?.pid === pid) rmSync(stateFilePath(dataDir), { force: true });
}

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
