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
