/**
 * An error caused by the user's input or setup (bad config, missing key, bad flag).
 * The CLI prints its message and hint on one line each, with no stack trace.
 */
export class UserError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'UserError';
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

const WRITE_FAILURES: Record<string, string> = {
  ENOSPC: 'disk full',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EIO: 'I/O error',
  EFBIG: 'file too large',
  EISDIR: 'a directory is in the way',
  ENOTDIR: 'a file is in the way',
};

/**
 * A write that did not complete (nothing of it is left behind): why, in words and as the system's code, and where.
 * `fix` says what the user can do about it.
 */
export class FileWriteError extends Error {
  readonly reason: string;
  readonly fix: string;

  constructor(
    readonly code: string,
    readonly path: string,
    detail?: string,
  ) {
    const reason = WRITE_FAILURES[code] ?? 'write failed';
    super(`${reason} (${code}) at ${path}${detail ? `: ${detail}` : ''}`);
    this.name = 'FileWriteError';
    this.reason = reason;
    this.fix =
      code === 'ENOSPC' || code === 'EDQUOT' || code === 'EFBIG'
        ? 'free space'
        : code === 'EIO'
          ? 'check the disk'
          : code === 'EROFS'
            ? 'remount its file system read-write (or use a --config folder on a writable disk)'
            : `make ${path} writable`;
  }

  /** True for errors about the disk itself (full, read-only, failing), whatever the call that met them. */
  static isDiskError(error: unknown): boolean {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    return code === 'ENOSPC' || code === 'EDQUOT' || code === 'EROFS' || code === 'EIO' || code === 'EFBIG';
  }

  /** Wraps a system error (or passes a FileWriteError through), naming the path the bare error leaves out. */
  static of(error: unknown, path: string): FileWriteError {
    if (error instanceof FileWriteError) return error;
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    return new FileWriteError(typeof code === 'string' ? code : 'EIO', path, code ? undefined : errorMessage(error));
  }
}
