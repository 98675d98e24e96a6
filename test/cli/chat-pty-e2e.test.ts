/**
 * The built `nanobot agent` chat in a real pseudo-terminal (util-linux `script` gives one; node has none built in):
 * a bracketed paste of indented code is one turn with its indentation, Ctrl+C at the prompt clears the line and the
 * chat goes on, Ctrl+D leaves.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { editConfig, runCli, tempHome } from './cli-helpers.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');
let fake: FakeLLM | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await fake?.close();
  fake = undefined;
});

function shellQuote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** `nanobot agent` on a pty; `type` writes raw bytes to the terminal, `screen` is everything it showed. */
function chatOnPty(home: string) {
  const command = [process.execPath, BIN, 'agent', '--no-markdown'].map(shellQuote).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TERM: 'xterm' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let screen = '';
  child.stdout.on('data', (d: Buffer) => {
    screen += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    screen += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { type: (bytes: string) => child.stdin.write(bytes), screen: () => screen, exited };
}

/** The user message of each model request, in order. */
function userTurns(): string[] {
  return (fake?.requests ?? []).map((r) => {
    const messages = (r.body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
    const last = messages.filter((m) => m.role === 'user').at(-1)?.content;
    const text = typeof last === 'string' ? last : JSON.stringify(last);
    // The runtime-context block follows the user's text.
    return text.split('\n\n[Runtime Context')[0] ?? '';
  });
}

describe('nanobot agent chat on a terminal (process)', () => {
  it('a pasted block is one turn with its indentation; Ctrl+C clears the line; Ctrl+D leaves', async () => {
    const home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    fake = await startFakeLLM([{ text: 'Looks fine.' }, { text: 'Hello again.' }]);
    editConfig(home, (c) => {
      c.agents.defaults.provider = 'custom';
      c.agents.defaults.model = 'test-model';
      c.providers.custom = { apiKey: 'k', apiBase: `${fake?.url}/v1` };
    });
    const pty = chatOnPty(home);
    // The prompt is up once bracketed paste is switched on and "You: " is shown.
    await eventually(() => pty.screen().includes('\x1b[?2004h') && pty.screen().includes('You: '), {
      timeoutMs: 20_000,
    });
    pty.type('\x1b[200~def f(x):\r    if x:\r        return 1\r    return 0\r\x1b[201~');
    pty.type('\r');
    await eventually(() => pty.screen().includes('Looks fine.'), { timeoutMs: 20_000 });
    expect(userTurns()).toEqual(['def f(x):\n    if x:\n        return 1\n    return 0']);

    // Ctrl+C at the prompt: the line is dropped, nothing is sent, the chat is still there.
    await eventually(() => pty.screen().split('Looks fine.')[1]?.includes('You: '));
    pty.type('never send this\x03');
    await eventually(() => pty.screen().includes('^C'));
    pty.type('hi\r');
    await eventually(() => pty.screen().includes('Hello again.'), { timeoutMs: 20_000 });
    expect(userTurns()).toEqual(['def f(x):\n    if x:\n        return 1\n    return 0', 'hi']);

    await eventually(() => pty.screen().split('Hello again.')[1]?.includes('You: '));
    pty.type('\x04');
    expect(await pty.exited).toBe(0);
    expect(pty.screen()).toContain('\x1b[?2004l');
  });
});
