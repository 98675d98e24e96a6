/**
 * Connect's session rules for a login that saves into config.json (Feishu): a cancel that arrives while the save
 * is being written does not interleave with it (the save finishes and the login succeeds, as upstream's lock
 * does), and a cancel before the save leaves the config untouched.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { WebUiBackend } from '../../src/channels/websocket/backend.js';
import { connectActions } from '../../src/webui/channel-connect.js';
import { eventually } from '../channels/contract.js';
import { type FakeFeishu, startFakeFeishu } from '../channels/feishu/fake-open-platform.js';

const NEW_APP = { id: 'cli_0a0b0c0d0e0f0a0b', secret: 'ConnectSecret0123456789' };
let fake: FakeFeishu | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function setup(url: string) {
  const backend = {} as WebUiBackend;
  const saves: Record<string, unknown>[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let entered!: () => void;
  const saving = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const actions = connectActions({
    features: () => ({ features: [], enabled_count: 0 }),
    dataDir: () => mkdtempSync(join(tmpdir(), 'nb-connect-')),
    block: () => ({ domain: url }),
    update: async (_backend, mutate) => {
      entered();
      await gate;
      const raw: Record<string, unknown> = {};
      mutate(raw);
      saves.push(raw);
    },
  });
  const act = async (name: string, payload: Record<string, unknown>) =>
    (await actions[`settings.channel.connect.${name}`]?.({ backend }, payload)) as Record<string, unknown>;
  return { act, saves, release, saving };
}

describe('Feishu Connect sessions', () => {
  it('a cancel during the save does not interleave: the save finishes and the login succeeds', async () => {
    fake = await startFakeFeishu({ app: NEW_APP });
    const { act, saves, release, saving } = setup(fake.url);
    const started = await act('start', { channel: 'feishu' });
    expect(started.status).toBe('pending');
    fake.registration.scan();
    await saving;
    const cancelled = await act('cancel', { channel: 'feishu', session_id: started.session_id });
    expect(cancelled.status).toBe('pending');
    release();
    await eventually(async () =>
      expect((await act('poll', { channel: 'feishu', session_id: started.session_id })).status).toBe('succeeded'),
    );
    expect(saves).toHaveLength(1);
    expect(JSON.stringify(saves[0])).toContain(NEW_APP.id);
  }, 20_000);

  it('a cancel before the confirmation saves nothing', async () => {
    fake = await startFakeFeishu({ app: NEW_APP });
    const { act, saves } = setup(fake.url);
    const started = await act('start', { channel: 'feishu' });
    const cancelled = await act('cancel', { channel: 'feishu', session_id: started.session_id });
    expect(cancelled.status).toBe('cancelled');
    fake.registration.scan();
    expect((await act('poll', { channel: 'feishu', session_id: started.session_id })).status).toBe('cancelled');
    expect(saves).toEqual([]);
  });
});
