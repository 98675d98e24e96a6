/**
 * The last resort of the long-running surfaces (`gateway`, `serve`, the interactive `agent`). Node ends the process
 * on an unhandled rejection or an uncaught exception: one failing turn took every channel down that way. Every
 * known path handles its own failures (`npm run check` refuses unhandled promise chains); this catches the rest.
 *
 * - An unhandled rejection is logged (secrets masked) and the process keeps serving. The promise has settled: the
 *   code that failed has already unwound, and nothing was left half-done because nobody listened to its result.
 * - An uncaught exception that is an I/O error (a Node system error, with `syscall` and `code`, such as ECONNRESET
 *   or EPIPE: an emitter's 'error' nobody listened for) is logged and the process keeps serving. Such errors are
 *   emitted from their own tick, so none of our code was interrupted; the socket they came from is gone.
 * - Any other uncaught exception (a TypeError: a bug) may have stopped our code halfway through changing in-memory
 *   state — a lane counter, a queue — and carrying on could leave a chat hanging without a word. It is logged, the
 *   surface shuts down gracefully (turns are checkpointed; every file is written atomically, so nothing is lost) and
 *   the process exits 1, for its supervisor to restart it (the installed service restarts on failure). A second
 *   one while shutting down, or a shutdown that overruns its deadline, exits 1 at once.
 */
import { redactSecrets } from '../security/secrets.js';
import type { Logger } from '../util/log.js';

export interface LastResortOptions {
  /** e.g. "gateway": names the surface in the log. */
  surface: string;
  log: Logger;
  /** Secret values to mask (the config's keys and tokens). */
  secrets?: () => Iterable<string>;
  /** The graceful stop after a fatal exception. */
  shutdown?: () => Promise<void>;
  /** Bound on that stop (default 9.5 s, the gateway's own shutdown deadline). */
  shutdownDeadlineMs?: number;
  exit?: (code: number) => void;
  /** The emitter to listen on (tests pass their own). */
  target?: NodeJS.EventEmitter;
}

/** True for a Node system error (it names the failed system call): an I/O failure, not a bug in our code. */
export function isSystemError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const { code, syscall } = err as NodeJS.ErrnoException;
  return typeof code === 'string' && typeof syscall === 'string';
}

/** Installs the policy above; returns an undo. */
export function installLastResort(options: LastResortOptions): () => void {
  const target = options.target ?? process;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const describe = (err: unknown) =>
    redactSecrets(err instanceof Error ? (err.stack ?? err.message) : String(err), options.secrets?.() ?? []);
  let fatal = false;

  const onRejection = (reason: unknown) => {
    options.log.error(`${options.surface}: unhandled rejection (still serving): ${describe(reason)}`);
  };
  const onException = (err: unknown) => {
    if (!fatal && isSystemError(err)) {
      options.log.error(`${options.surface}: uncaught I/O error (still serving): ${describe(err)}`);
      return;
    }
    options.log.error(`${options.surface}: uncaught exception: ${describe(err)}`);
    if (fatal) {
      exit(1);
      return;
    }
    fatal = true;
    options.log.error(`${options.surface}: shutting down (the state after a bug cannot be trusted); exit code 1`);
    setTimeout(() => exit(1), options.shutdownDeadlineMs ?? 9_500).unref();
    Promise.resolve()
      .then(() => options.shutdown?.())
      .then(
        () => exit(1),
        (stopErr: unknown) => {
          options.log.error(`${options.surface}: shutdown failed: ${describe(stopErr)}`);
          exit(1);
        },
      );
  };
  target.on('unhandledRejection', onRejection);
  target.on('uncaughtException', onException);
  return () => {
    target.off('unhandledRejection', onRejection);
    target.off('uncaughtException', onException);
  };
}
