/** A workspace's memory as Dream leaves it: the three files, a few memory commits made by MemoryGit, history entries. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MemoryGit } from '../../src/memory/git.js';
import { HistoryStore } from '../../src/memory/history.js';

export const FIRST_MEMORY = '# Memory\n\n## Projects\n- garden-bot: waters the tomatoes\n';
export const DREAMT_MEMORY =
  '# Memory\n\n## Projects\n- garden-bot: waters the tomatoes\n- Lives in Berlin since May\n';

export interface SeededMemory {
  git: MemoryGit;
  baseline: string;
  /** The Dream commit that added "Lives in Berlin since May" to MEMORY.md. */
  dream: string;
  /** A later commit that changed USER.md only. */
  user: string;
}

export async function seedMemory(workspace: string): Promise<SeededMemory> {
  mkdirSync(join(workspace, 'memory'), { recursive: true });
  writeFileSync(join(workspace, 'SOUL.md'), '# Soul\n\nI am nanobot, **calm** and brief.\n');
  writeFileSync(join(workspace, 'USER.md'), '# User\n\n- Name: Ada\n');
  writeFileSync(join(workspace, 'memory', 'MEMORY.md'), FIRST_MEMORY);
  const git = new MemoryGit(workspace);
  await git.init();
  const [baseline] = await git.log(1);
  writeFileSync(join(workspace, 'memory', 'MEMORY.md'), DREAMT_MEMORY);
  const dream = await git.commitChanges('dream: remember the move to Berlin\n\nMEMORY.md +1');
  writeFileSync(join(workspace, 'USER.md'), '# User\n\n- Name: Ada\n- Timezone: Europe/Berlin\n');
  const user = await git.commitChanges('dream: note the timezone');
  if (!baseline || !dream || !user) throw new Error('the memory commits were not made');
  const history = new HistoryStore(workspace);
  await history.append('User said they moved to Berlin in May.', 'websocket:c1');
  await history.append('User asked to water the tomatoes every morning at 7.', 'websocket:c1');
  await history.append('Talked about the Raspberry Pi setup.', 'telegram:42');
  return { git, baseline: baseline.sha, dream, user };
}
