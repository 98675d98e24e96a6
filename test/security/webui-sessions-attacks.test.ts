/**
 * Hostile session keys against nanobot's session routes and `session.delete`: a key names a file
 * (`~/.nanobot/webui/<safe key>.jsonl`, the session file), so every spelling of a path escape, another channel's
 * session, an over-long or control-character key must be refused (400/404) and touch nothing on disk.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';

const open: { run: WebUiGateway; clients: TestClient[] }[] = [];
afterEach(async () => {
  for (const { run, clients } of open.splice(0)) {
    for (const client of clients) await client.close();
    await run.close();
  }
});

const HOSTILE_KEYS = [
  'websocket:../config',
  'websocket:..',
  'websocket:.',
  'websocket:../../etc/passwd',
  'websocket:..%2fconfig',
  'websocket:%2e%2e',
  'websocket:a/b',
  'websocket:a\\b',
  'websocket:/abs',
  'websocket:a\u0000b',
  'websocket:a\nb',
  'websocket: spaced',
  'websocket:ünicode',
  `websocket:${'x'.repeat(200)}`,
  'websocket:',
  'cli:direct',
  'telegram:123',
  'websocket',
  ':victim',
  'WEBSOCKET:victim',
  'websocket:victim%00',
  'websocket:victim.jsonl',
  '',
];

describe('hostile session keys on the WebUI session routes', () => {
  it('refuses every spelling and deletes or reads nothing it should not', async () => {
    const run = await startWebUiGateway([{ text: 'kept' }]);
    const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
    open.push({ run, clients: [client] });
    await client.next((f) => f.event === 'ready');
    client.send({ type: 'message', chat_id: 'victim', content: 'keep this chat' });
    await client.next((f) => f.event === 'turn_end', 10_000);
    const decoy = join(run.dataDir, 'webui', 'websocket_..json');
    writeFileSync(decoy, '{}');
    const before = readdirSync(join(run.dataDir, 'webui')).sort();

    let attempts = 0;
    let refused = 0;
    for (const key of HOSTILE_KEYS) {
      for (const route of ['webui-thread', 'context', 'automations']) {
        attempts += 1;
        const res = await fetch(`${run.url}/api/sessions/${encodeURIComponent(key)}/${route}`, {
          headers: { authorization: `Bearer ${run.token}` },
        });
        if (res.status === 400 || res.status === 404) refused += 1;
        else expect.fail(`${route} ${JSON.stringify(key)} answered ${res.status}`);
      }
      attempts += 1;
      const id = `k-${attempts}`;
      client.send({ type: 'webui_request', request_id: id, action: 'session.delete', payload: { key } });
      const answer = await client.next((f) => f.event === 'webui_response' && f.request_id === id);
      if (answer.event === 'webui_response' && !answer.ok && [400, 404].includes(answer.error.status)) refused += 1;
      else expect.fail(`session.delete ${JSON.stringify(key)}: ${JSON.stringify(answer)}`);
    }
    expect(refused).toBe(attempts);
    expect(attempts).toBe(HOSTILE_KEYS.length * 4);
    // Nothing was removed: the chat, its transcript, the decoy, the config.
    expect(readdirSync(join(run.dataDir, 'webui')).sort()).toEqual(before);
    expect(existsSync(join(run.dataDir, 'config.json'))).toBe(true);
    const list = await fetch(`${run.url}/api/sessions`, { headers: { authorization: `Bearer ${run.token}` } });
    expect(((await list.json()) as { sessions: { key: string }[] }).sessions.map((s) => s.key)).toEqual([
      'websocket:victim',
    ]);
  });
});
