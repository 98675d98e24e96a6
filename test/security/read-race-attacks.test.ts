/**
 * Check-then-use races on the read side (issue 15, item 2). A background process swaps a workspace directory and a
 * symlink to a directory outside with renameat2(RENAME_EXCHANGE), as a sandboxed `exec` can, while a tool reads the
 * path again and again. A tool that checks the path and then opens it again by name returns the outside file
 * every so often; an fd-anchored one never does. Every attempt below must come back without the secret.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboundMessage } from '../../src/bus/types.js';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createApplyPatchTool } from '../../src/tools/filesystem/apply-patch.js';
import { createEditFileTool } from '../../src/tools/filesystem/edit-file.js';
import { createListDirTool } from '../../src/tools/filesystem/list-dir.js';
import { createReadFileTool } from '../../src/tools/filesystem/read-file.js';
import { createMessageTool } from '../../src/tools/message.js';
import { createFindFilesTool, createGrepTool } from '../../src/tools/search/index.js';
import type { ToolResult } from '../../src/tools/types.js';
import { api, connect, startChannel } from '../channels/websocket/helpers.js';
import { renameSwapSupported, type Swapper, startSwapper } from '../helpers/rename-swapper.js';
import { makeContext, makeTempDir } from '../tools/helpers.js';

const ROUNDS = 600;
const SECRET = 'SECRET-7f3a-apiKey';
const SECRET_NAME = 'secret-name-7f3a.txt';
const LEAKS = [SECRET, Buffer.from(SECRET).toString('base64'), SECRET_NAME];
const leaks = (text: string): boolean => LEAKS.some((marker) => text.includes(marker));

type Arena = ReturnType<typeof arena>;
const racing: { arena: Arena; swapper: Swapper }[] = [];
const stopped: Array<() => Promise<void>> = [];
afterEach(async () => {
  await calm();
  for (const stop of stopped.splice(0)) await stop();
});

/** Stops every swapper and puts each arena back as it started (`box` the directory, `swap` the link). */
async function calm(): Promise<void> {
  for (const { arena: a, swapper } of racing.splice(0)) {
    await swapper.stop();
    if (fs.lstatSync(a.box).isSymbolicLink()) {
      fs.renameSync(a.box, `${a.box}.tmp`);
      fs.renameSync(a.swap, a.box);
      fs.renameSync(`${a.box}.tmp`, a.swap);
    }
  }
}

/** `ws/box` (harmless files) and `ws/swap` → `outside/` (the same names, holding the secret). */
function arena(parent = makeTempDir('nb-race-'), outsideParent = parent) {
  const ws = path.join(parent, 'ws');
  const outside = path.join(outsideParent, 'outside');
  const box = path.join(ws, 'box');
  fs.mkdirSync(box, { recursive: true });
  fs.mkdirSync(outside, { recursive: true });
  fs.writeFileSync(path.join(box, 'data.txt'), 'harmless text\n');
  fs.writeFileSync(path.join(box, 'pic.png'), Buffer.from('harmless png'));
  fs.writeFileSync(path.join(box, 'bin.dat'), Buffer.from([0, 1, 2, 0, 3]));
  fs.writeFileSync(path.join(box, 'harmless-name.txt'), 'harmless text\n');
  for (const name of ['data.txt', 'pic.png', 'bin.dat', SECRET_NAME]) {
    fs.writeFileSync(path.join(outside, name), `${SECRET}\n`);
  }
  fs.symlinkSync(outside, path.join(ws, 'swap'));
  return { parent, ws, outside, box, swap: path.join(ws, 'swap') };
}

async function race(a: Arena): Promise<void> {
  racing.push({ arena: a, swapper: await startSwapper(a.box, a.swap) });
}

const resultText = (result: ToolResult): string => JSON.stringify(result.content);
const readOrError = (file: string): string => {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    return String(error);
  }
};

/**
 * Runs `attempt` ROUNDS times while the swappers run (cycling through the spellings) and counts the leaks; then
 * calms the arenas and runs the first spelling once more, so a test can show the tool still works (`afterwards`).
 */
async function attack<T>(spellings: T[], attempt: (spelling: T) => Promise<string>) {
  let leaked = 0;
  for (let i = 0; i < ROUNDS; i++) {
    if (leaks(await attempt(spellings[i % spellings.length] as T))) leaked++;
  }
  await calm();
  return { leaked, afterwards: await attempt(spellings[0] as T) };
}

describe.skipIf(!renameSwapSupported())(
  'read-side races: a directory swapped with a link out (RENAME_EXCHANGE)',
  () => {
    it('read_file never returns the outside file (text, image, binary sniff; several spellings)', async () => {
      const a = arena();
      const tool = createReadFileTool({ policy: createPathPolicy({ workspace: a.ws, restrictToWorkspace: true }) });
      await race(a);
      const spellings = ['box/data.txt', 'swap/data.txt', 'box/pic.png', 'box/bin.dat', `${a.ws}/box/data.txt`];
      spellings.push('./box/../box/data.txt', 'box//data.txt');
      const outcome = await attack(spellings, async (p) =>
        resultText(await tool.execute({ path: p, force: true }, makeContext())),
      );
      expect(outcome.leaked).toBe(0);
      expect(outcome.afterwards).toContain('harmless');
    });

    it('list_dir never lists the outside directory (plain and recursive)', async () => {
      const a = arena();
      const tool = createListDirTool({ policy: createPathPolicy({ workspace: a.ws, restrictToWorkspace: true }) });
      await race(a);
      const spellings = [
        { path: 'box' },
        { path: 'swap' },
        { path: '.', recursive: true },
        { path: 'box', recursive: true },
      ];
      const outcome = await attack(spellings, async (args) => resultText(await tool.execute(args, makeContext())));
      expect(outcome.leaked).toBe(0);
      expect(outcome.afterwards).toContain('harmless');
    });

    it('grep never searches the outside directory (as its root, in its walk, or as a file root)', async () => {
      const a = arena();
      const tool = createGrepTool({ policy: createPathPolicy({ workspace: a.ws, restrictToWorkspace: true }) });
      await race(a);
      const pattern = 'SECRET|harmless';
      const spellings = [
        { pattern, path: 'box', output_mode: 'content' as const },
        { pattern, output_mode: 'content' as const },
        { pattern, path: '.', output_mode: 'files_with_matches' as const },
        { pattern, path: 'box/data.txt', output_mode: 'content' as const },
        { pattern, path: 'swap', output_mode: 'count' as const },
      ];
      const outcome = await attack(spellings, async (args) => resultText(await tool.execute(args, makeContext())));
      expect(outcome.leaked).toBe(0);
      expect(outcome.afterwards).toContain('harmless');
    });

    it('find_files never lists the outside directory (as its root or in its walk)', async () => {
      const a = arena();
      const tool = createFindFilesTool({ policy: createPathPolicy({ workspace: a.ws, restrictToWorkspace: true }) });
      await race(a);
      const spellings = [
        { path: 'box' },
        {},
        { query: 'name' },
        { path: '.', sort: 'mtime' as const },
        { path: 'swap' },
        { glob: '**/*.txt' },
      ];
      const outcome = await attack(spellings, async (args) => resultText(await tool.execute(args, makeContext())));
      expect(outcome.leaked).toBe(0);
      expect(outcome.afterwards).toContain('harmless');
    });

    it('edit_file and apply_patch never read the outside file as the old content', async () => {
      const a = arena();
      const policy = createPathPolicy({ workspace: a.ws, restrictToWorkspace: true });
      const edit = createEditFileTool({ policy });
      const patch = createApplyPatchTool({ policy });
      await race(a);
      // A near miss makes the tools quote the most similar lines of what they read; a hit would write it back.
      const near = 'SECRET-7f3a-apiKez';
      const spellings = [
        () =>
          edit.execute(
            { path: 'box/data.txt', old_text: 'harmless', new_text: 'harmless+', replace_all: true },
            makeContext(),
          ),
        () => edit.execute({ path: 'box/data.txt', old_text: near, new_text: 'x' }, makeContext()),
        () => edit.execute({ path: 'box/data.txt', old_text: 'SECRET', new_text: 'redacted' }, makeContext()),
        () =>
          patch.execute(
            { edits: [{ path: 'box/data.txt', action: 'replace', old_text: near, new_text: 'x' }] },
            makeContext(),
          ),
      ];
      const outcome = await attack(spellings, async (run) => resultText(await run()));
      expect(outcome.leaked).toBe(0);
      expect(outcome.afterwards).toContain('harmless');
      // Nothing read outside was written back into the workspace, and the outside file is untouched.
      expect(leaks(fs.readFileSync(path.join(a.box, 'data.txt'), 'utf8'))).toBe(false);
      expect(fs.readFileSync(path.join(a.outside, 'data.txt'), 'utf8')).toBe(`${SECRET}\n`);
    });

    it('message media: what the channel opens later is never the outside file', async () => {
      const a = arena();
      const mediaDir = path.join(a.parent, 'data', 'media', 'outbound');
      const sent: OutboundMessage[] = [];
      const tool = createMessageTool({
        send: (m) => sent.push(m),
        policy: createPathPolicy({ workspace: a.ws, restrictToWorkspace: true }),
        mediaDir,
        maxPerMinute: 10_000,
      });
      const ctx = makeContext({ channel: 'telegram', chatId: '42', sessionKey: 'telegram:42' });
      await race(a);
      const outcome = await attack(['box/data.txt', 'swap/data.txt', `${a.ws}/box/pic.png`], async (media) => {
        const result = await tool.execute({ content: 'here', media: [media] }, ctx);
        const message = sent.pop();
        // What a channel does later: open the attachment by the path it was given (a few times: stat, upload, retry).
        const opened = [1, 2, 3].map(() => message?.media?.map((p) => readOrError(p)).join('\n') ?? '').join('\n');
        return `${resultText(result)}\n${opened}`;
      });
      expect(outcome.leaked).toBe(0);
      expect(outcome.afterwards).toContain('harmless');
    });

    it('/api/media never serves the outside file (a workspace path, and a swap inside the media dir)', async () => {
      const started = await startChannel({ enabled: true });
      stopped.push(() => started.channel.stop());
      const inWorkspace = arena();
      // As if something could write into the media dir: a swap there must not lead out of it either.
      const inMedia = arena(path.join(started.dataDir, 'media', 'outbound'), started.dataDir);
      const links: string[] = [];
      const client = await connect(started.port, { token: started.token, clientId: 'victim' });
      stopped.push(() => client.close());
      const ready = (await client.next()) as { chat_id: string };
      for (const file of [path.join(inMedia.box, 'data.txt'), path.join(inWorkspace.box, 'data.txt')]) {
        await started.channel.send({ channel: 'websocket', chatId: ready.chat_id, content: 'f', media: [file] });
        const frame = await client.next((f) => f.event === 'message');
        const url = frame.event === 'message' ? frame.media_urls?.[0]?.url : undefined;
        // A file outside the media dir gets no URL at all; one inside gets a signed one (no token needed).
        if (file.startsWith(inWorkspace.box)) expect(url).toBeUndefined();
        else links.push(url ?? '');
      }
      expect(links).toEqual([expect.stringMatching(/^\/api\/media\/[^/]+\/[^/]+$/)]);
      await race(inWorkspace);
      await race(inMedia);
      const outcome = await attack(links, async (link) => {
        try {
          return await (await api(started, link, { token: null })).text();
        } catch (error) {
          return String(error); // a response cut short is no leak, and must not end the attack early
        }
      });
      expect(outcome.leaked).toBe(0);
      expect(outcome.afterwards).toContain('harmless');
    }, 60_000);
  },
);
