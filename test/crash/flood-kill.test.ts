/**
 * Issue 16 item 5, crash side: a round of 130 calls is appended as it goes, so `nanobot agent -m` killed with SIGKILL
 * in the middle of it leaves a consistent session. The kill lands at a known point: call 25 is `exec sleep 5`, and the
 * child is killed once the 24 results before it are on disk. The follow-up turn must keep those 24 unchanged, answer
 * the other 106 calls as interrupted, and send the model a well-formed history (the invariants of sigkill.test.ts).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, watch } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, type FakeReply, startFakeLLM } from '../helpers/fake-llm.js';
import {
  checkRequestHistory,
  checkSessionFile,
  readSessionSnapshot,
  toolResultsOnDisk,
  userTextOf,
} from './session-invariants.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');
const CALLS = 130;
const BLOCKING_CALL = 24;

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function reply(body: Record<string, unknown>): FakeReply {
  const messages = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
  const text = userTextOf(messages.findLast((m) => m.role === 'user')?.content);
  if (text === 'check' || messages.at(-1)?.role === 'tool') return { text: 'checked' };
  return {
    toolCalls: Array.from({ length: CALLS }, (_, i) =>
      i === BLOCKING_CALL
        ? { id: `call_${i}`, name: 'exec', arguments: { command: 'sleep 5' } }
        : { id: `call_${i}`, name: 'write_file', arguments: { path: `flood/f-${i}.txt`, content: `file ${i}\n` } },
    ),
  };
}

/** Runs `agent -m flood` and SIGKILLs it once `results` tool results are in the session file. */
function killMidRound(home: string, sessionFile: string, results: number): Promise<{ signal: string | null }> {
  const child = spawn(process.execPath, [BIN, 'agent', '-m', 'flood'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
    stdio: 'ignore',
  });
  const watcher = watch(join(sessionFile, '..'), () => {
    const text = existsSync(sessionFile) ? readFileSync(sessionFile, 'utf8') : '';
    if ((text.match(/"role":"tool"/g) ?? []).length >= results) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (_code, signal) => {
      watcher.close();
      resolve({ signal });
    });
  });
}

describe('nanobot agent killed in the middle of a 130-call round', () => {
  it('keeps every result it saved, answers the rest as interrupted, and the next turn goes on', async () => {
    const home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    fake = await startFakeLLM();
    const llm = fake;
    for (let i = 0; i < 4; i++) llm.enqueue(reply);
    editConfig(home, (c) => {
      c.agents.defaults.provider = 'custom';
      c.agents.defaults.model = 'test-model';
      c.providers.custom = { apiKey: 'test-key', apiBase: `${llm.url}/v1` };
    });
    // A first turn creates the session folder to watch.
    expect((await runCli(['agent', '-m', 'check'], home)).code).toBe(0);
    const root = join(home, '.nanobot', 'sessions');
    const sessionFile = join(
      root,
      readdirSync(root)[0] ?? '',
      `${Buffer.from('cli:direct').toString('base64url')}.jsonl`,
    );

    const exit = await killMidRound(home, sessionFile, BLOCKING_CALL);
    expect(exit.signal).toBe('SIGKILL');
    const atCrash = readSessionSnapshot(sessionFile);
    const savedAtCrash = toolResultsOnDisk(atCrash);
    expect(savedAtCrash).toHaveLength(BLOCKING_CALL);
    expect(atCrash.messages.filter((m) => m.toolCalls.length === CALLS)).toHaveLength(1);

    const followUp = await runCli(['agent', '-m', 'check'], home);
    expect(followUp.code, followUp.stderr).toBe(0);
    expect(followUp.stdout.trim()).toBe('checked');

    const after = readSessionSnapshot(sessionFile);
    const violations = checkSessionFile(after, {
      userTextsOnce: ['flood'],
      userTextsAtMostOnce: [],
      toolResultsAtCrash: savedAtCrash,
      killId: 'flood kill',
    });
    const request = llm.requests.at(-1)?.body.messages;
    violations.push(...checkRequestHistory(Array.isArray(request) ? request : [], 'flood kill'));
    expect(violations).toEqual([]);
    const results = after.messages.filter((m) => m.role === 'tool');
    expect(results).toHaveLength(CALLS);
    expect(results.filter((m) => /interrupted/.test(String(m.content)))).toHaveLength(CALLS - BLOCKING_CALL);
  }, 60_000);
});
