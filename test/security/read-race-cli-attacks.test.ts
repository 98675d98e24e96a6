/**
 * The read race (issue 15, item 2) through what ships: the built `bin/nanobot.js agent -m`, driven by a scripted
 * model that reads a swapped path 300 times (read_file, list_dir, grep, find_files), while a separate process swaps
 * a workspace directory with a link to ~/.nanobot (renameat2 RENAME_EXCHANGE), as a background exec could. The API
 * key in config.json and the names in ~/.nanobot must never reach the model.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, type FakeToolCall, startFakeLLM } from '../helpers/fake-llm.js';
import { renameSwapSupported, type Swapper, startSwapper } from '../helpers/rename-swapper.js';

const API_KEY = 'sk-race-SECRET-7f3a';
const SECRET_NAME = 'secret-name-7f3a.txt';
const STEPS = 10;

let fake: FakeLLM | undefined;
let swapper: Swapper | undefined;
afterEach(async () => {
  await swapper?.stop();
  swapper = undefined;
  await fake?.close();
  fake = undefined;
});

/** 30 reads of the swapped path in one model turn (they run in parallel, as a model's parallel calls do). */
function reads(): FakeToolCall[] {
  const calls: FakeToolCall[] = [];
  for (let i = 0; i < 12; i++) calls.push({ name: 'read_file', arguments: { path: 'box/config.json', force: true } });
  for (let i = 0; i < 3; i++) calls.push({ name: 'read_file', arguments: { path: 'swap/config.json', force: true } });
  for (const args of [{ path: 'box' }, { path: 'swap' }, { path: 'box', recursive: true }, { path: '.' }]) {
    calls.push({ name: 'list_dir', arguments: args });
  }
  calls.push({ name: 'list_dir', arguments: { path: '.', recursive: true } });
  for (const p of ['box', '.', 'box/config.json', 'swap', 'box']) {
    calls.push({ name: 'grep', arguments: { pattern: 'apiKey|harmless', path: p, output_mode: 'content' } });
  }
  for (const args of [{ path: 'box' }, {}, { query: 'name' }, { path: 'swap' }, { glob: '**/*.txt' }]) {
    calls.push({ name: 'find_files', arguments: args });
  }
  return calls;
}

describe.skipIf(!renameSwapSupported())('nanobot agent -m: file tools under a directory/link swap race', () => {
  it('never puts the config (API key) or names from ~/.nanobot into a model request', async () => {
    const home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    const dataDir = path.join(home, '.nanobot');
    const ws = path.join(dataDir, 'workspace');
    const box = path.join(ws, 'box');
    const swap = path.join(ws, 'swap');
    fs.mkdirSync(box);
    fs.writeFileSync(path.join(box, 'config.json'), '{"note": "harmless"}\n');
    fs.writeFileSync(path.join(box, 'harmless-name.txt'), 'harmless\n');
    fs.writeFileSync(path.join(dataDir, SECRET_NAME), `${API_KEY}\n`);
    fs.symlinkSync(dataDir, swap);

    const calm = async (): Promise<void> => {
      await swapper?.stop();
      swapper = undefined;
      if (fs.lstatSync(box).isSymbolicLink()) {
        fs.renameSync(box, `${box}.tmp`);
        fs.renameSync(swap, box);
        fs.renameSync(`${box}.tmp`, swap);
      }
    };
    fake = await startFakeLLM([
      ...Array.from({ length: STEPS }, () => ({ toolCalls: reads() })),
      // Once the swapping has stopped, one more read shows the tools still work.
      async () => {
        await calm();
        return { toolCalls: [{ name: 'read_file', arguments: { path: 'box/config.json', force: true } }] };
      },
      { text: 'Done reading.' },
    ]);
    editConfig(home, (c) => {
      c.agents.defaults.provider = 'custom';
      c.agents.defaults.model = 'test-model';
      c.providers.custom = { apiKey: API_KEY, apiBase: `${fake?.url ?? ''}/v1` };
    });
    expect(fs.readFileSync(path.join(dataDir, 'config.json'), 'utf8')).toContain(API_KEY);

    swapper = await startSwapper(box, swap);
    const result = await runCli(['agent', '-m', 'Read box/config.json many times'], home);
    await calm();
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('Done reading.');

    const bodies = fake.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => JSON.stringify(r.body));
    expect(bodies).toHaveLength(STEPS + 2);
    const toolResults = bodies.at(-1)?.match(/"role":"tool"/g) ?? [];
    expect(toolResults.length).toBe(STEPS * 30 + 1);
    // Counted, not asserted one by one: a leaking body is 100 KB of prompt.
    expect(bodies.filter((body) => body.includes(API_KEY) || body.includes(SECRET_NAME)).length).toBe(0);
    expect(bodies.at(-1)).toContain('harmless');
    expect(result.stdout + result.stderr).not.toContain(API_KEY);
  }, 120_000);
});
