/**
 * `<dataDir>/gateway.json`: how `nanobot gateway status|stop|logs` find the running gateway.
 * Written atomically at start, removed at a clean exit; a file whose pid is dead is stale and ignored.
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface GatewayState {
  pid: number;
  host: string;
  port: number;
  startedAt: string;
  logFile: string;
  configPath: string;
}

export function stateFilePath(dataDir: string): string {
  return join(dataDir, 'gateway.json');
}

export function logFilePath(dataDir: string): string {
  return join(dataDir, 'logs', 'gateway.log');
}

export function readState(dataDir: string): GatewayState | undefined {
  const path = stateFilePath(dataDir);
  if (!existsSync(path)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<GatewayState>;
    if (typeof parsed.pid !== 'number' || typeof parsed.port !== 'number') return undefined;
    return {
      pid: parsed.pid,
      port: parsed.port,
      host: parsed.host ?? '127.0.0.1',
      startedAt: parsed.startedAt ?? '',
      logFile: parsed.logFile ?? logFilePath(dataDir),
      configPath: parsed.configPath ?? '',
    };
  } catch {
    return undefined;
  }
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
