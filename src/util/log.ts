/** A tiny leveled logger on stderr. Surfaces can swap the sink (e.g. the gateway writes to a log file). */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export function createLogger(
  level: LogLevel = 'warn',
  sink: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Logger {
  const emit = (at: LogLevel, message: string) => {
    if (ORDER[at] >= ORDER[level]) sink(at === 'info' ? message : `[${at}] ${message}`);
  };
  return {
    debug: (m) => emit('debug', m),
    info: (m) => emit('info', m),
    warn: (m) => emit('warn', m),
    error: (m) => emit('error', m),
  };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** A `.catch` handler for work nobody awaits: the failure is logged instead of becoming an unhandled rejection. */
export function logFailure(log: Logger, what: string): (err: unknown) => void {
  return (err) => log.error(`${what}: ${err instanceof Error ? err.message : String(err)}`);
}
