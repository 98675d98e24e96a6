/**
 * `nanobot agent -m` against an endpoint that accepts the connection and never answers (the built binary): within
 * seconds stderr says it is waiting for the model and what bounds the wait; stdout, which scripts read, stays empty.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { tempHome } from './cli-helpers.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');

let server: net.Server | undefined;
const sockets = new Set<net.Socket>();
afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A TCP server on 127.0.0.1 that reads whatever comes and never writes a byte back; counts connections. */
async function silentServer(): Promise<{ url: string; connections: () => number }> {
  let connections = 0;
  const listening = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.resume();
  });
  server = listening;
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  const { port } = listening.address() as net.AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1`, connections: () => connections };
}

/** Runs `nanobot agent <args>` against the silent endpoint until stderr shows the wait; returns what it printed. */
async function untilWaitShown(args: string[], input?: string): Promise<{ stdout: string; stderr: string }> {
  const endpoint = await silentServer();
  const child = spawn(process.execPath, [BIN, 'agent', ...args], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: tempHome(),
      OPENAI_API_KEY: 'sk-test',
      NANOBOT_PROVIDERS__OPENAI__API_BASE: endpoint.url,
      NANOBOT_LLM_TIMEOUT_S: '600',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  // The chat reads its lines from stdin; stdin stays open, as a user's terminal would.
  if (input !== undefined) child.stdin.write(input);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  try {
    await eventually(() => expect(stderr).toMatch(/waiting for the model: no answer yet after \d+ s/), {
      timeoutMs: 20_000,
    });
    expect(endpoint.connections()).toBe(1);
    return { stdout, stderr };
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
}

describe('nanobot agent when the endpoint never answers', () => {
  it('-m: says on stderr that it is waiting, naming NANOBOT_LLM_TIMEOUT_S; nothing on stdout', async () => {
    const { stdout, stderr } = await untilWaitShown(['-m', 'hi']);
    expect(stderr).toContain('NANOBOT_LLM_TIMEOUT_S=600 bounds the wait for a reply to start');
    expect(stdout).toBe('');
  }, 30_000);

  it("the chat: the wait shows on stderr after the question, nothing of it on the chat's stdout", async () => {
    const { stdout, stderr } = await untilWaitShown([], 'hi\n');
    expect(stderr).toContain('NANOBOT_LLM_TIMEOUT_S=600');
    expect(stdout).toContain('You: ');
    expect(stdout).not.toContain('waiting for the model');
  }, 30_000);
});
