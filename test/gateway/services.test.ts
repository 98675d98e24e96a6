import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Agent } from '../../src/app/agent.js';
import type { GatewayContext } from '../../src/gateway/lifecycle.js';
import { boundHeartbeatHistory } from '../../src/gateway/services.js';
import { HEARTBEAT_SESSION } from '../../src/heartbeat/service.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';

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
