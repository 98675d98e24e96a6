/** A turn that could not be saved says so in words the user can act on, before (or instead of) anything else. */
import type { Session, SessionStore } from '../session/types.js';
import { FileWriteError, UserError } from '../util/errors.js';

export type Unsaved = 'your message' | 'the answer';

export class TurnNotSavedError extends UserError {
  /** The same without the file's path, for chat users (the path is in the log). */
  readonly chatText: string;

  constructor(
    readonly what: Unsaved,
    override readonly cause: FileWriteError,
  ) {
    super(`could not save ${what}: ${cause.reason} (${cause.code}) at ${cause.path}; ${cause.fix} and resend`);
    this.name = 'TurnNotSavedError';
    const fix =
      cause.code === 'EROFS' || cause.fix.startsWith('make ') ? 'make the sessions folder writable' : cause.fix;
    this.chatText = `Sorry, I could not save ${what}: ${cause.reason} (${cause.code}) on the server; ${fix} and resend.`;
  }
}

/** Saves `session`; a failed write becomes a TurnNotSavedError saying what was not saved. */
export async function saveOrExplain(sessions: SessionStore, session: Session, what: Unsaved): Promise<void> {
  try {
    await sessions.save(session);
  } catch (error) {
    if (error instanceof FileWriteError) throw new TurnNotSavedError(what, error);
    throw error;
  }
}
