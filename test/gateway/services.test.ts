import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { Agent } from '../../src/app/agent.js';
import { type LoadedConfig, loadConfig } from '../../src/config/load.js';
import type { GatewayContext } from '../../src/gateway/lifecycle.js';
import { boundHeartbeatHistory, heartbeatService } from '../../src/gateway/services.js';
import { HEARTBEAT_SESSION } from '../../src/heartbeat/service.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { createLogger } from '../../src/util/log.js';

describe('heartbeat history bound', () => {
  it('keeps only the last messages visible, from a user message, without deleting anything', async () => {
    const sessions = new JsonlSessionStore(await mkdtemp(join(tmpdir(), 'nb-hbs-')));
    const session = await sessions.load(HEARTBEAT_SESSION);
    for (let i = 0; i < 10; i++) {
      session.messages.push(
        { role: 'user', content: `beat ${i}` },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'exec', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: `c${i}`, name: 'exec', content: 'ok' },
        { role: 'assistant', content: `report ${i}` },
      );
    }
    await sessions.save(session);
    const context = { agent: () => ({ sessions }) as unknown as Agent } as unknown as GatewayContext;

    await boundHeartbeatHistory(context, 8);
    const bounded = await sessions.load(HEARTBEAT_SESSION);
    expect(bounded.messages).toHaveLength(40);
    expect(bounded.lastConsolidated).toBe(32);
    expect(bounded.messages[bounded.lastConsolidated]).toMatchObject({ role: 'user', content: 'beat 8' });

    await boundHeartbeatHistory(context, 6); // 6 back would start on a tool result: move forward to a user message
    expect((await sessions.load(HEARTBEAT_SESSION)).lastConsolidated).toBe(36);
  });
});

describe('heartbeat settings reload', () => {
  async function loaded(dir: string, heartbeat: Record<string, unknown>): Promise<LoadedConfig> {
    const configPath = join(dir, 'config.json');
    await writeFile(configPath, JSON.stringify({ gateway: { heartbeat } }));
    return loadConfig({ configPath, workspace: join(dir, 'workspace'), env: {}, home: dir });
  }

  it('takes new settings from a reload: switched on, a new interval, then off, without a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nb-hbr-'));
    // An unreadable HEARTBEAT.md (a folder) makes every beat say so in the log: the beats can be counted.
    await mkdir(join(dir, 'workspace', 'HEARTBEAT.md'), { recursive: true });
    const lines: string[] = [];
    let current = await loaded(dir, { enabled: false, intervalS: 60 });
    const context = { loaded: () => current, log: createLogger('info', (line) => lines.push(line)) };
    const service = heartbeatService(context as unknown as GatewayContext);
    const beats = () => lines.filter((line) => line.includes('skipping this beat')).length;
    vi.useFakeTimers();
    try {
      service.start();
      await vi.advanceTimersByTimeAsync(3_600_000);
      expect(beats()).toBe(0);

      current = await loaded(dir, { enabled: true, intervalS: 600 });
      service.reconfigure?.(current);
      await vi.advanceTimersByTimeAsync(1_200_000);
      expect(beats()).toBe(2);
      expect(lines).toContain('heartbeat: every 600s now');

      current = await loaded(dir, { enabled: true, intervalS: 60 });
      service.reconfigure?.(current);
      await vi.advanceTimersByTimeAsync(600_000);
      expect(beats()).toBe(12);

      current = await loaded(dir, { enabled: false, intervalS: 60 });
      service.reconfigure?.(current);
      await vi.advanceTimersByTimeAsync(3_600_000);
      expect(beats()).toBe(12);
    } finally {
      vi.useRealTimers();
      await service.stop();
    }
  });
});
