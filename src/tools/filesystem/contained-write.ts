/**
 * Writes for file tools: atomic (util/fs) and contained. The target's directory is opened and checked against the
 * policy at write time, so a directory swapped for a symlink after the path was checked cannot carry the write
 * outside the workspace. Returns the directories it had to create.
 *
 * The edits' reads of the old content are contained the same way: the file is opened, then its real path is checked
 * for write access (the content is about to be written back there), and the bytes come from that fd.
 */
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { openCheckedFile, policyCheck } from '../../security/checked-open.js';
import { type PathPolicy, withContainedDirectory } from '../../security/workspace.js';
import { isNotFound } from '../../security/workspace-fs.js';
import { writeFileAtomic } from '../../util/fs.js';

const readWholeFd = promisify(fs.readFile);

/** The current bytes of `target` for an edit, or undefined when it does not exist. Refusals throw. */
export async function readContained(policy: PathPolicy, target: string): Promise<Buffer | undefined> {
  let fd: number;
  try {
    fd = openCheckedFile(target, policyCheck(policy, 'write')).fd;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  try {
    return await readWholeFd(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export function writeFileContained(policy: PathPolicy, target: string, data: string | Uint8Array): Promise<string[]> {
  return withContainedDirectory(policy, path.dirname(target), async (dir) => {
    await writeFileAtomic(path.join(dir.anchor, path.basename(target)), data);
    return dir.created;
  });
}
