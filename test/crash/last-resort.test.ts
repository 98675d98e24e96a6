/**
 * The last-resort policy of the long-running surfaces (src/cli/last-resort.ts): an unhandled rejection or an
 * uncaught I/O error is logged with secrets masked and the process keeps serving; any other uncaught exception
 * shuts down gracefully and exits 1. Proved on the policy itself and on the real `gateway` and `serve`, with faults
 * planted by a preloaded module (test/crash/fixtures/plant-faults.mjs).
 */
import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { installLastResort, isSystemError } from '../../src/cli/last-resort.js';
import type { Logger } from '../../src/util/log.js';
import { spawnCli } from '../cli/cli-helpers.js';
import { homeWith } from '../e2e/harness.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { freePort } from '../mcp/helpers.js';

const PLANT = join(import.meta.dirname, 'fixtures', 'plant-faults.mjs');
const SECRET = 'test-key'; // the API key homeWith() configures

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (m: string) => lines.push(m);
  return { lines, debug: push, info: push, warn: push, error: push };
}

const ioError = () => Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' });

describe('installLastResort', () => {
  function install(shutdown: () => Promise<void> = () => Promise.resolve()) {
    const target = new EventEmitter();
    const log = recordingLog();
    const exits: number[] = [];
    let exited: (code: number) => void = () => undefined;
    const exit = new Promise<number>((resolve) => {
      exited = resolve;
    });
    const undo = installLastResort({
      surface: 'gateway',
      log,
      secrets: () => ['sekrit-value-123'],
      shutdown,
      shutdownDeadlineMs: 60_000,
      exit: (code) => {
        exits.push(code);
        exited(code);
      },
      target,
    });
    return { target, log, exits, exit, undo };
  }

  it('logs an unhandled rejection with secrets masked and keeps running', () => {
    const { target, log, exits } = install();
    target.emit('unhandledRejection', new Error('failed: sekrit-value-123 and Bearer abc123def456'));
    target.emit('unhandledRejection', 'a bare string reason');
    expect(exits).toEqual([]);
    expect(log.lines.join('\n')).toContain('gateway: unhandled rejection (still serving): Error: failed: <redacted>');
    expect(log.lines.join('\n')).not.toMatch(/sekrit|abc123def456/);
    expect(log.lines[1]).toContain('a bare string reason');
  });

  it('logs an uncaught I/O error and keeps running', () => {
    const { target, log, exits } = install();
    target.emit('uncaughtException', ioError());
    expect(exits).toEqual([]);
    expect(log.lines[0]).toMatch(/^gateway: uncaught I\/O error \(still serving\): Error: write EPIPE/);
  });

  it('shuts down and exits 1 after any other uncaught exception', async () => {
    let stopped = false;
    const { target, log, exit } = install(async () => {
      stopped = true;
    });
    target.emit('uncaughtException', new TypeError("Cannot read properties of undefined (reading 'x')"));
    expect(await exit).toBe(1);
    expect(stopped).toBe(true);
    expect(log.lines.join('\n')).toMatch(/uncaught exception: TypeError/);
  });

  it('exits 1 when that shutdown fails, and at once on a second exception while shutting down', async () => {
    const failing = install(() => Promise.reject(new Error('stop failed')));
    failing.target.emit('uncaughtException', new Error('bug'));
    expect(await failing.exit).toBe(1);
    expect(failing.log.lines.join('\n')).toContain('shutdown failed: Error: stop failed');

    const hanging = install(() => new Promise(() => undefined));
    hanging.target.emit('uncaughtException', new Error('bug'));
    expect(hanging.exits).toEqual([]);
    hanging.target.emit('uncaughtException', ioError()); // even an I/O error: the state is already not trusted
    expect(hanging.exits).toEqual([1]);
  });

  it('undo removes the listeners', () => {
    const { target, undo } = install();
    undo();
    expect(target.listenerCount('unhandledRejection') + target.listenerCount('uncaughtException')).toBe(0);
  });

  it('tells I/O errors from bugs', () => {
    expect(isSystemError(ioError())).toBe(true);
    expect(isSystemError(Object.assign(new Error('x'), { code: 'ERR_INVALID_ARG_TYPE' }))).toBe(false);
    expect(isSystemError(new TypeError('x'))).toBe(false);
    expect(isSystemError('ECONNRESET')).toBe(false);
  });
});

interface Running {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

const children: ChildProcess[] = [];
let fake: FakeLLM | undefined;
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await fake?.close();
  fake = undefined;
});

function startWithFaults(args: string[], home: string): Running {
  const running = spawnCli(args, home, { nodeArgs: ['--import', PLANT], env: { PLANTED_SECRET: SECRET } });
  children.push(running.child);
  return running;
}

/** Polls (bounded) until `check` holds; fails early if the process exited. */
async function until(running: Running, check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (running.child.exitCode !== null) throw new Error(`exited before ${what}:\n${running.output()}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${running.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The exit code, or a failure once `ms` passed without an exit. */
function exitWithin(running: Running, ms: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no exit in ${ms} ms:\n${running.output()}`)), ms);
  });
  return Promise.race([running.exited, late]).finally(() => clearTimeout(timer));
}

const healthy = async (url: string) => (await fetch(url).catch(() => undefined))?.status === 200;

const surfaces = [
  { name: 'gateway', args: (port: number) => ['gateway', '--port', String(port)], surface: 'gateway' },
  { name: 'serve', args: (port: number) => ['serve', '--port', String(port)], surface: 'nanobot API' },
];

for (const { name, args, surface } of surfaces) {
  describe(`nanobot ${name} under planted faults`, () => {
    it('keeps serving after an unhandled rejection and an uncaught I/O error (secrets masked), and exits 1 after a bug', async () => {
      fake = await startFakeLLM([]);
      const port = await freePort();
      const { home } = homeWith(fake.url, { channels: { websocket: { enabled: false } } });
      const running = startWithFaults(args(port), home);
      const health = `http://127.0.0.1:${port}/health`;
      await until(running, () => healthy(health), '/health to answer');

      running.child.kill('SIGUSR2');
      await until(running, () => running.output().includes('planted rejection'), 'the rejection to be logged');
      expect(running.output()).toContain(`${surface}: unhandled rejection (still serving): Error: planted rejection`);
      expect(running.output()).not.toContain(SECRET);
      expect(await healthy(health)).toBe(true);

      running.child.kill('SIGHUP');
      await until(running, () => running.output().includes('ECONNRESET'), 'the I/O error to be logged');
      expect(running.output()).toContain(`${surface}: uncaught I/O error (still serving): Error: read ECONNRESET`);
      expect(await healthy(health)).toBe(true);

      running.child.kill('SIGWINCH');
      expect(await exitWithin(running, 20_000)).toBe(1);
      expect(running.output()).toMatch(new RegExp(`${surface}: uncaught exception: TypeError`));
    }, 60_000);
  });
}
