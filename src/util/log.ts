/** A tiny leveled logger on stderr. Surfaces can swap the sink (e.g. the gateway writes to a log file). */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

const gone = new WeakSet<NodeJS.WritableStream>();
const watched = new WeakSet<NodeJS.WritableStream>();

/**
 * Writes `text` to `stream` (stderr) unless it has failed. A closed pipe (the terminal went away, `| head` ended)
 * emits EPIPE as an 'error' event; unheard, that is an uncaught exception, which the last resort logs, to stderr
 * again: a loop that filled a log file with 33 GB. Heard here, the stream is marked gone and never written again.
 */
export function writeUnlessGone(text: string, stream: NodeJS.WritableStream = process.stderr): void {
  if (!watched.has(stream)) {
    watched.add(stream);
    stream.on('error', () => gone.add(stream));
  }
  if (gone.has(stream)) return;
  try {
    stream.write(text);
  } catch {
    gone.add(stream);
  }
}

export function createLogger(
  level: LogLevel = 'warn',
  sink: (line: string) => void = (line) => writeUnlessGone(`${line}\n`),
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
