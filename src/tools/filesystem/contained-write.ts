/**
 * Writes for file tools: atomic (util/fs) and contained. The target's directory is opened and checked against the
 * policy at write time, so a directory swapped for a symlink after the path was checked cannot carry the write
 * outside the workspace. Returns the directories it had to create.
 */
import path from 'node:path';
import { type PathPolicy, withContainedDirectory } from '../../security/workspace.js';
import { writeFileAtomic } from '../../util/fs.js';

export function writeFileContained(policy: PathPolicy, target: string, data: string | Uint8Array): Promise<string[]> {
  return withContainedDirectory(policy, path.dirname(target), async (dir) => {
    await writeFileAtomic(path.join(dir.anchor, path.basename(target)), data);
    return dir.created;
  });
}
