/**
 * nanobot's cross-process locks (py-filelock: an flock on a lock file in the workspace), taken from Node. Node has
 * no flock call, so util-linux `flock(1)` takes it on a descriptor this process opened (through the workspace-file
 * layer) and shares with it: the lock belongs to that open file description and stays held after `flock` exits,
 * until we close the descriptor. Where `flock(1)` is missing (macOS), `fn` runs without it; our own processes still
 * exclude each other through their own locks.
 */
import { spawn } from 'node:child_process';
import { errorMessage, UserError } from '../util/errors.js';
import { type WorkspaceFileHandle, WorkspaceFs } from './workspace-fs.js';

const WAIT_S = 10;

/** Runs `fn` holding the flock on `<workspace>/<rel>` (created empty when missing, never through a link). */
export async function withWorkspaceFlock<T>(workspace: string, rel: string, fn: () => Promise<T>): Promise<T> {
  const wfs = new WorkspaceFs(workspace);
  let file: WorkspaceFileHandle;
  try {
    wfs.appendFileSync(rel, '');
    file = wfs.openFile(rel, 'update');
  } catch (err) {
    throw new UserError(`Cannot open the lock file ${wfs.pathOf(rel)}: ${errorMessage(err)}`);
  }
  try {
    const outcome = await flock(file.fd);
    if (outcome !== 'locked' && outcome !== 'no-flock') {
      throw new UserError(
        `${wfs.pathOf(rel)} stayed locked for ${WAIT_S} s (${outcome}).`,
        'Another nanobot process (ours or the Python one) is changing the same files; try again.',
      );
    }
    return await fn();
  } finally {
    file.close();
  }
}

/** Takes the flock on `fd` through `flock(1)`, asynchronously: waiting must not stall the event loop. */
function flock(fd: number): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn('flock', ['--exclusive', '--wait', String(WAIT_S), '3'], {
      stdio: ['ignore', 'ignore', 'ignore', fd],
    });
    child.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ENOENT' ? 'no-flock' : err.message));
    child.once('exit', (code, signal) => resolve(code === 0 ? 'locked' : `flock exited ${signal ?? code}`));
  });
}
