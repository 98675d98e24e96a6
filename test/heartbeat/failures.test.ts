/**
 * Heartbeat failures are logged (issue 16 item 8): a failed agent turn (the gateway's heartbeat turn), an evaluator
 * that fails, and a result for a chat whose channel is not running. Each beat is driven by `tick()`.
 */
import { writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ChannelHealth } from '../../src/channels/manager.js';
import type { GatewayContext } from '../../src/gateway/lifecycle.js';
import { heartbeatNotify, heartbeatTurn } from '../../src/gateway/services.js';
import { type HeartbeatOptions, HeartbeatService } from '../../src/heartbeat/service.js';
import { newSession } from '../../src/session/types.js';

const TASKS = '# Heartbeat Tasks\n\n## Active Tasks\n\n- Watch the disk\n\n## Completed\n';

function capturingLog() {
  const lines: string[] = [];
  const log = {
    debug() {},
    info: (m: string) => lines.push(`info ${m}`),
    warn: (m: string) => lines.push(`warn ${m}`),
    error: (m: string) => lines.push(`error ${m}`),
  };
  return { log, lines };
}

/** A gateway context whose agent turn answers `output`, whose last chat is telegram:42, with these channels. */
function gateway(output: { content: string; error?: { message: string } }, channels: Record<string, ChannelHealth>) {
  const published: unknown[] = [];
  const { log, lines } = capturingLog();
  const chat = newSession('telegram:42');
  chat.metadata.last_channel = 'telegram:42';
  const sessions = {
    list: async () => [{ key: 'telegram:42', updatedAt: '', messageCount: 1 }],
    load: async (key: string) => (key === 'telegram:42' ? chat : newSession(key)),
    save: async () => undefined,
  };
  const context = {
    agent: () => ({ sessions, loop: { processMessage: async () => output } }),
    bus: { publishOutbound: (message: unknown) => published.push(message) },
    channels: () => channels,
    log,
  } as unknown as GatewayContext;
  return { context, published, lines, log };
}

async function heartbeat(options: Omit<HeartbeatOptions, 'workspace' | 'intervalS'>) {
  const workspace = await mkdtemp(join(tmpdir(), 'nb-hb-fail-'));
  writeFileSync(join(workspace, 'HEARTBEAT.md'), TASKS);
  return new HeartbeatService({ workspace, intervalS: 1800, ...options });
}

describe('heartbeat failures are logged', () => {
  it('a failed agent turn is a failed beat with its reason, not "nothing to report"', async () => {
    const run = gateway({ content: 'Sorry, something went wrong.', error: { message: 'provider down (503)' } }, {});
    let evaluated = 0;
    const service = await heartbeat({
      runTurn: heartbeatTurn(run.context, 20),
      evaluate: async () => {
        evaluated++;
        return true;
      },
      notify: heartbeatNotify(run.context),
      log: run.log,
    });
    expect(await service.tick()).toMatchObject({ ran: true, notified: false });
    expect(run.lines).toContainEqual(expect.stringMatching(/^warn heartbeat failed: .*provider down \(503\)/));
    expect(evaluated).toBe(0);
    expect(run.published).toEqual([]);
  });

  it('an evaluator that fails is logged, and nothing is sent (fail closed)', async () => {
    const run = gateway({ content: 'Disk is 95% full.' }, { telegram: { state: 'running', restarts: 0 } });
    const service = await heartbeat({
      runTurn: heartbeatTurn(run.context, 20),
      evaluate: async () => {
        throw new Error('evaluator timed out');
      },
      notify: heartbeatNotify(run.context),
      log: run.log,
    });
    expect(await service.tick()).toMatchObject({ ran: true, notified: false });
    expect(run.lines).toContainEqual(expect.stringMatching(/^warn heartbeat: .*evaluator timed out/));
    expect(run.published).toEqual([]);
  });

  it.each([
    ['absent', {}],
    ['failed', { telegram: { state: 'error' as const, error: 'bad token', restarts: 0 } }],
  ])('a result for a chat whose channel is %s is a logged failure, not a silent drop', async (_what, channels) => {
    const run = gateway({ content: 'Disk is 95% full.' }, channels);
    const service = await heartbeat({
      runTurn: heartbeatTurn(run.context, 20),
      evaluate: async () => true,
      notify: heartbeatNotify(run.context),
      log: run.log,
    });
    await service.tick();
    expect(run.lines).toContainEqual(
      expect.stringMatching(/^warn heartbeat failed: the result was not delivered to telegram:42: .*telegram/),
    );
    expect(run.published).toEqual([]);
  });

  it('a result for a running channel is sent', async () => {
    const run = gateway({ content: 'Disk is 95% full.' }, { telegram: { state: 'running', restarts: 0 } });
    const service = await heartbeat({
      runTurn: heartbeatTurn(run.context, 20),
      evaluate: async () => true,
      notify: heartbeatNotify(run.context),
      log: run.log,
    });
    expect(await service.tick()).toMatchObject({ notified: true });
    expect(run.published).toEqual([{ channel: 'telegram', chatId: '42', content: 'Disk is 95% full.' }]);
  });
});
