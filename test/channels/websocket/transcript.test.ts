/**
 * Chats continued in our gateway land in nanobot's WebUI transcript (`~/.nanobot/webui/websocket_<chat>.jsonl`), in
 * the shape nanobot's own writer uses (nanobot/webui/transcript.py): compact JSON lines with `event`, `chat_id` and
 * `created_at_ms`; `user` with `text`; the reply as `message` or `stream_end` with the whole `text`; `turn_end`. No
 * deltas. What was there is never rewritten.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { transcriptStem } from '../../../src/channels/websocket/transcript.js';
import { upstreamHome } from '../../helpers/upstream-homes.js';
import { startWebUiGateway, type WebUiGateway } from './gateway-helpers.js';
import { connect, type TestClient } from './helpers.js';

const open: { run: WebUiGateway; clients: TestClient[] }[] = [];
afterEach(async () => {
  for (const { run, clients } of open.splice(0)) {
    for (const client of clients) await client.close();
    await run.close();
  }
});

const linesOf = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1);

/** The fields nanobot's replay reads from each event. */
function upstreamShape(line: string): Record<string, unknown> {
  expect(line).toBe(JSON.stringify(JSON.parse(line))); // compact, as nanobot writes (separators ",", ":")
  const record = JSON.parse(line) as Record<string, unknown>;
  expect(typeof record.event).toBe('string');
  expect(typeof record.chat_id).toBe('string');
  expect(Number.isInteger(record.created_at_ms)).toBe(true);
  return record;
}

async function chat(run: WebUiGateway, chatId: string, content: string) {
  const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  open.at(-1)?.clients.push(client);
  await client.next((f) => f.event === 'ready');
  client.send({ type: 'attach', chat_id: chatId });
  await client.next((f) => f.event === 'attached');
  client.send({ type: 'message', chat_id: chatId, content });
  await client.next((f) => f.event === 'turn_end' && f.chat_id === chatId, 10_000);
}

describe("nanobot's WebUI transcript", () => {
  it('names the file as nanobot does', () => {
    expect(transcriptStem('websocket:py-web-chat-1')).toBe('websocket_py-web-chat-1');
    expect(transcriptStem('websocket:a/b\\c<d>e|f?g*h"i')).toBe('websocket_a_b_c_d_e_f_g_h_i');
  });

  it.each([
    { streaming: true, reply: 'stream_end' },
    { streaming: false, reply: 'message' },
  ])(
    'gets the user turn, the whole reply and turn_end of each turn (streaming: $streaming)',
    async ({ streaming, reply }) => {
      const run = await startWebUiGateway([{ text: 'Hi there, Alice.' }, { text: 'Still here.' }], { streaming });
      open.push({ run, clients: [] });
      await chat(run, 'chat-1', 'Hello, I am Alice');
      await chat(run, 'chat-1', 'Are you there?');
      const path = join(run.dataDir, 'webui', 'websocket_chat-1.jsonl');
      const records = linesOf(path).map(upstreamShape);
      expect(records.map((r) => r.event)).toEqual(['user', reply, 'turn_end', 'user', reply, 'turn_end']);
      expect(records[0]).toMatchObject({ event: 'user', chat_id: 'chat-1', text: 'Hello, I am Alice' });
      expect(records[1]).toMatchObject({ chat_id: 'chat-1', text: 'Hi there, Alice.' });
      expect(records[4]).toMatchObject({ text: 'Still here.' });
      expect(JSON.stringify(records)).not.toContain('Runtime Context');
    },
  );

  it("appends to a real upstream chat's transcript, keeping every line nanobot wrote", async () => {
    const py = upstreamHome('pyhome');
    try {
      const run = await startWebUiGateway([{ text: 'Hello from the TypeScript gateway.' }]);
      open.push({ run, clients: [] });
      const name = 'websocket_py-web-chat-1.jsonl';
      mkdirSync(join(run.dataDir, 'webui'), { recursive: true });
      copyFileSync(join(py.dataDir, 'webui', name), join(run.dataDir, 'webui', name));
      const before = linesOf(join(run.dataDir, 'webui', name));
      before.map(upstreamShape);

      await chat(run, 'py-web-chat-1', 'hello again from the new gateway');
      const after = linesOf(join(run.dataDir, 'webui', name));
      expect(after.slice(0, before.length)).toEqual(before);
      const added = after.slice(before.length).map(upstreamShape);
      expect(added.map((r) => r.event)).toEqual(['user', 'stream_end', 'turn_end']);
      expect(added[1]?.text).toBe('Hello from the TypeScript gateway.');
      // nanobot's own records have the same keys for the same events.
      const theirs = before.map((line) => JSON.parse(line) as Record<string, unknown>);
      const ourEnd = added[1] ?? {};
      const theirEnd = theirs.find((r) => r.event === 'stream_end') ?? {};
      expect(Object.keys(ourEnd).sort()).toEqual(Object.keys(theirEnd).sort());
      expect(existsSync(join(run.dataDir, 'webui', 'websocket_py-web-chat-1.json'))).toBe(false);
    } finally {
      py.cleanup();
    }
  });
});
