/**
 * `nanobot agent -m` on a full disk: the sessions folder is a small real tmpfs (this needs root; skipped otherwise),
 * filled so that the next append fits only part of its line: the kernel writes a short count, then ENOSPC.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';

function canMount(): boolean {
  if (process.getuid?.() !== 0) return false;
  const probe = join(tempHome(), 'probe');
  mkdirSync(probe);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const mounted: string[] = [];
let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
  for (const dir of mounted.splice(0)) execFileSync('umount', [dir], { stdio: 'ignore' });
});

async function homeWithSmallDisk() {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  const sessions = join(home, '.nanobot', 'sessions');
  mkdirSync(sessions, { recursive: true, mode: 0o700 });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'tmpfs', sessions]);
  mounted.push(sessions);
  fake = await startFakeLLM([{ text: 'First answer.' }]);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'test-key', apiBase: `${fake?.url}/v1` };
  });
  const file = () => {
    const [ws] = readdirSync(sessions).filter((n) => /^[0-9a-f]{32}$/.test(n));
    return join(sessions, ws ?? '', `${Buffer.from('cli:direct').toString('base64url')}.jsonl`);
  };
  /** Leaves about `room` bytes free. */
  const fill = (room: number) => {
    const { bavail, bsize } = statfsSync(sessions);
    writeFileSync(join(sessions, 'filler'), Buffer.alloc(Math.max(0, bavail * bsize - room)));
  };
  const free = () => rmSync(join(sessions, 'filler'));
  return { home, file, fill, free };
}

const wholeLines = (text: string) =>
  text.endsWith('\n') &&
  text
    .split('\n')
    .slice(0, -1)
    .every((l) => typeof JSON.parse(l) === 'object');
const chatRequests = () => fake?.requests.filter((r) => r.path === '/v1/chat/completions').length ?? 0;
const messagesOf = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l && !l.includes('"_type"'))
    .map((l) => JSON.parse(l) as { role: string; content: string });

describe.skipIf(!canMount())('a full disk under the sessions folder (real tmpfs)', () => {
  it("fails the turn before the model is called when the user's message cannot be saved, and says so", async () => {
    const { home, file, fill, free } = await homeWithSmallDisk();
    expect((await runCli(['agent', '-m', 'hello'], home)).code).toBe(0);
    expect(chatRequests()).toBe(1);
    const before = readFileSync(file(), 'utf8');

    fill(16 * 1024);
    const big = `remember this: ${'x'.repeat(120_000)}`; // one argument holds at most 128 KiB
    const full = await runCli(['agent', '-m', big], home);
    expect(full.code).not.toBe(0);
    // The first line says it all. (A stack dump may follow until the turn's rejection stops leaking: issue 16 item 1.)
    expect(full.stderr.split('\n')[0]).toBe(
      `Error: could not save your message: disk full (ENOSPC) at ${file()}; free space and resend`,
    );
    expect(chatRequests()).toBe(1); // the model was not called
    expect(readFileSync(file(), 'utf8')).toBe(before);

    free();
    fake?.enqueue({ text: 'Got it.' });
    const again = await runCli(['agent', '-m', big], home);
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toBe('Got it.');
    const text = readFileSync(file(), 'utf8');
    expect(wholeLines(text)).toBe(true);
    const messages = messagesOf(file());
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(messages[1]?.content).toBe('First answer.');
    expect(messages[2]?.content.startsWith(big)).toBe(true);
  });

  it('an answer that cannot be saved fails the command with the reason, leaving whole lines', async () => {
    const { home, file, fill, free } = await homeWithSmallDisk();
    expect((await runCli(['agent', '-m', 'hello'], home)).code).toBe(0);
    fill(24 * 1024);
    fake?.enqueue({ text: `A long answer: ${'y'.repeat(200_000)}` });
    const full = await runCli(['agent', '-m', 'write me a lot'], home);
    expect(full.code).not.toBe(0);
    expect(full.stderr.split('\n')[0]).toBe(
      `Error: could not save the answer: disk full (ENOSPC) at ${file()}; free space and resend`,
    );
    expect(wholeLines(readFileSync(file(), 'utf8'))).toBe(true);

    free();
    fake?.enqueue({ text: 'Short now.' });
    const again = await runCli(['agent', '-m', 'again'], home);
    expect(again.code).toBe(0);
    const messages = messagesOf(file());
    expect(messages[0]?.content).toMatch(/^hello/);
    expect(messages[1]?.content).toBe('First answer.');
    expect(messages.some((m) => m.content.startsWith('write me a lot'))).toBe(true);
    expect(messages.at(-1)?.content).toBe('Short now.');
    expect(wholeLines(readFileSync(file(), 'utf8'))).toBe(true);
  });
});
