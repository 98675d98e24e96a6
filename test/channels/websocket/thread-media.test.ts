/**
 * An old chat shows its pictures after a reload: the user's upload comes back in `webui-thread` with a fresh signed
 * `/api/media/…` URL (the one the transcript kept would have expired), and the chat list's preview names the file,
 * never its place on the server.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionListRow } from '../../../src/channels/websocket/frames.js';
import { startWebUiGateway, type WebUiGateway } from './gateway-helpers.js';
import { connect, type TestClient } from './helpers.js';

const PIXEL_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

const open: { run: WebUiGateway; client: TestClient }[] = [];
afterEach(async () => {
  for (const { run, client } of open.splice(0)) {
    await client.close();
    await run.close();
  }
});

describe('media of old chats', () => {
  it('signs the user’s uploads again on reload; the preview shows no server path', async () => {
    const run = await startWebUiGateway([{ text: 'A single pixel.' }]);
    const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
    open.push({ run, client });
    await client.next((f) => f.event === 'ready');
    const uploaded = await fetch(`${run.url}/api/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${run.token}`, 'content-type': 'image/png', 'x-file-name': 'pixel.png' },
      body: PIXEL_PNG,
    });
    expect(uploaded.status).toBe(201);
    const { id } = (await uploaded.json()) as { id: string };
    client.send({ type: 'new_chat' });
    const attached = await client.next((f) => f.event === 'attached');
    const chatId = attached.event === 'attached' ? attached.chat_id : '';
    client.send({ type: 'message', chat_id: chatId, content: 'what is this', media: [id] });
    await client.next((f) => f.event === 'turn_end' && f.chat_id === chatId, 10_000);

    const get = (path: string) => fetch(`${run.url}${path}`, { headers: { authorization: `Bearer ${run.token}` } });
    const thread = (await (
      await get(`/api/sessions/${encodeURIComponent(`websocket:${chatId}`)}/webui-thread`)
    ).json()) as {
      messages: { role: string; media?: { kind: string; url?: string; name: string }[]; images?: unknown[] }[];
    };
    const user = thread.messages.find((m) => m.role === 'user');
    expect(user?.media).toEqual([
      {
        kind: 'image',
        url: expect.stringMatching(/^\/api\/media\/[\w-]+\/[\w-]+$/),
        name: expect.stringMatching(/\.png$/),
      },
    ]);
    expect(user?.images).toEqual([{ url: user?.media?.[0]?.url, name: user?.media?.[0]?.name }]);
    expect(JSON.stringify(user)).not.toContain(run.dataDir);
    const image = await fetch(`${run.url}${user?.media?.[0]?.url}`);
    expect(image.status).toBe(200);
    expect(Buffer.from(await image.arrayBuffer())).toEqual(PIXEL_PNG);

    const { sessions } = (await (await get('/api/sessions')).json()) as { sessions: SessionListRow[] };
    const row = sessions.find((s) => s.key === `websocket:${chatId}`);
    expect(row?.preview).toContain('what is this');
    expect(row?.preview).not.toContain(run.home);
    expect(row?.preview).not.toContain('/media/');
  });
});
