/** The gateway's logger: timestamped lines to `<dataDir>/logs/gateway.log` and to stderr. */
import { appendFileSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { createLogger, type Logger, type LogLevel, writeUnlessGone } from '../util/log.js';

/** A log bigger than this at start is moved to `gateway.log.1` (one generation is kept). */
const ROTATE_BYTES = 10 * 1024 * 1024;

export interface GatewayLoggerOptions {
  level: LogLevel;
  file: string;
  /** Also write to stderr (foreground runs; systemd/launchd capture it too). */
  stderr?: boolean;
}

export function createGatewayLogger(options: GatewayLoggerOptions): Logger {
  mkdirSync(dirname(options.file), { recursive: true });
  rotateIfLarge(options.file);
  const toStderr = options.stderr ?? true;
  return createLogger(options.level, (line) => {
    const stamped = `${new Date().toISOString()} ${line}\n`;
    // Synchronous on purpose: the last lines before a crash or a forced exit are the ones that matter.
    try {
      appendFileSync(options.file, stamped);
    } catch {
      // A full or read-only disk must not take the gateway down; stderr still has the line.
    }
    if (toStderr) writeUnlessGone(stamped);
  });
}

function rotateIfLarge(file: string): void {
  try {
    if (statSync(file).size > ROTATE_BYTES) renameSync(file, `${file}.1`);
  } catch {
    // No log yet.
  }
}
