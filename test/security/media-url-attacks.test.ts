/**
 * Signed media URLs (`/api/media/<sig>/<payload>`, no token): only a URL this process signed, before it expires,
 * for a file that really lies under ~/.nanobot/media when opened, is served; and never as a page of this origin
 * or to another site's page.
 */
import { createHmac } from 'node:crypto';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerFrame } from '../../src/channels/websocket/frames.js';
import { MediaSigner } from '../../src/channels/websocket/media-urls.js';
import { api, connect, type StartedChannel, startChannel, type TestClient } from '../channels/websocket/helpers.js';

const running: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of running.splice(0).reverse()) await stop();
});

async function open(): Promise<{ started: StartedChannel; c: TestClient; chatId: string }> {
  const started = await startChannel();
  running.push(() => started.channel.stop());
  const c = await connect(started.port, { token: started.token, clientId: 'tester' });
  running.push(() => c.close());
  const ready = (await c.next()) as Extract<ServerFrame, { event: 'ready' }>;
  return { started, c, chatId: ready.chat_id };
}

/** What a file the agent sent looks like on the wire. */
async function sendFile(started: StartedChannel, c: TestClient, chatId: string, path: string) {
  await started.channel.send({ channel: 'websocket', chatId, content: 'here', media: [path] });
  const frame = await c.next((f) => f.event === 'message' && f.text === 'here');
  if (frame.event !== 'message') throw new Error('no message frame');
  return frame;
}

describe('MediaSigner', () => {
  const root = '/home/u/.nanobot/media';

  it('signs only paths under the media dir, and its URLs expire', () => {
    let now = 1_000_000;
    const signer = new MediaSigner(root, Buffer.alloc(32, 1), () => now, 60_000);
    const good = signer.sign(`${root}/outbound/1/chart.png`);
    expect(good).toMatchObject({ name: 'chart.png', kind: 'image' });
    expect(good?.url).toMatch(/^\/api\/media\/[A-Za-z0-9_-]{22}\/[A-Za-z0-9_-]+$/);
    expect(signer.verify(good?.url ?? '')).toEqual({
      ok: true,
      path: `${root}/outbound/1/chart.png`,
      name: 'chart.png',
    });
    for (const outside of [
      '/home/u/.nanobot/config.json',
      `${root}/../config.json`,
      `${root}`,
      '/home/u/.nanobot/media-other/x.png',
      '/home/u/.nanobot/workspace/a.png',
      'relative/a.png',
    ]) {
      expect(signer.sign(outside), outside).toBeUndefined();
    }
    now += 61_000;
    expect(signer.verify(good?.url ?? '')).toMatchObject({ ok: false, status: 410 });
  });

  it('refuses forged, altered, foreign and malformed URLs', () => {
    const signer = new MediaSigner(root, Buffer.alloc(32, 1));
    const other = new MediaSigner(root, Buffer.alloc(32, 2));
    const url = signer.sign(`${root}/outbound/1/chart.png`)?.url ?? '';
    const [, , , sig = '', payload = ''] = url.split('/');
    const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
    const far = Math.ceil(Date.now() / 1000) + 3600;
    const attempts = [
      other.sign(`${root}/outbound/1/chart.png`)?.url ?? '',
      `/api/media/${sig}/${b64(`${far}/outbound/1/other.png`)}`,
      `/api/media/${sig}/${b64(`${far}/../config.json`)}`,
      `/api/media/${sig}/${b64(`${far + 99999}/outbound/1/chart.png`)}`,
      `/api/media/${sig.slice(0, -2)}AA/${payload}`,
      `/api/media/${sig}A/${payload}`,
      `/api/media//${payload}`,
      `/api/media/${sig}/`,
      `/api/media/${sig}/${payload}=`,
      `/api/media/${sig}/${payload}%2e`,
      `/api/media/${'A'.repeat(22)}/${payload}`,
      `/api/media/${sig}/${payload}/extra`,
      `/api/media/${sig}`,
    ];
    for (const attempt of attempts) expect(signer.verify(attempt).ok, attempt).toBe(false);
    // Even a correctly signed payload (one this process would never mint) cannot name a path outside the root.
    const mac = (text: string) =>
      createHmac('sha256', Buffer.alloc(32, 1))
        .update(`nanobot-media:${text}`)
        .digest()
        .subarray(0, 16)
        .toString('base64url');
    for (const rel of ['../config.json', 'outbound/../../config.json', '/etc/passwd', '..', '']) {
      const forged = b64(`${far}/${rel}`);
      expect(signer.verify(`/api/media/${mac(forged)}/${forged}`).ok, rel).toBe(false);
    }
    expect(signer.verify(`/api/media/${mac(b64(`${far}/outbound/x.png`))}/${b64(`${far}/outbound/x.png`)}`).ok).toBe(
      true,
    );
  });
});

describe('/api/media/<sig>/<payload> over HTTP', () => {
  it('a file the agent sent: media paths + media_urls, fetched without the token, never as a page', async () => {
    const { started, c, chatId } = await open();
    mkdirSync(join(started.dataDir, 'media', 'outbound', '1-a'), { recursive: true });
    const svg = join(started.dataDir, 'media', 'outbound', '1-a', 'chart.svg');
    writeFileSync(svg, '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    const png = join(started.dataDir, 'media', 'outbound', '1-a', 'pixel.png');
    writeFileSync(png, Buffer.from([0x89, 0x50, 0x4e, 0x47]));

    const frame = await sendFile(started, c, chatId, svg);
    expect(frame).toEqual({
      event: 'message',
      chat_id: chatId,
      text: 'here',
      media: [svg],
      media_urls: [{ url: expect.stringMatching(/^\/api\/media\/[^/]+\/[^/]+$/), name: 'chart.svg', kind: 'file' }],
    });
    const url = frame.media_urls?.[0]?.url ?? '';
    const res = await api(started, url, { token: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment/);
    expect(res.headers.get('content-security-policy')).toMatch(/sandbox/);
    expect(res.headers.get('cross-origin-resource-policy')).toBe('same-origin');
    expect(await res.text()).toContain('<svg');

    const image = await sendFile(started, c, chatId, png);
    expect(image.media_urls?.[0]).toMatchObject({ name: 'pixel.png', kind: 'image' });
    const shown = await api(started, image.media_urls?.[0]?.url ?? '', { token: null });
    expect(shown.status).toBe(200);
    expect(shown.headers.get('content-type')).toBe('image/png');
    expect(shown.headers.get('content-disposition')).toMatch(/^inline/);
    expect(Buffer.from(await shown.arrayBuffer())).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47]));

    // Only GET/HEAD; a page on another origin is refused before anything is read.
    expect((await api(started, url, { token: null, method: 'DELETE' })).status).toBe(405);
    expect((await api(started, url, { token: null, headers: { origin: 'http://evil.example' } })).status).toBe(403);
    // Other /api routes still need the token.
    expect((await api(started, '/api/sessions', { token: null })).status).toBe(401);
    expect((await api(started, '/api/media/AAAAAAAAAAAAAAAAAAAAAA/AAAA', { token: null })).status).toBe(401);
  });

  it('serves only files inside the media dir, decided on the opened file', async () => {
    const { started, c, chatId } = await open();
    const secret = join(started.dataDir, 'config.json');
    writeFileSync(secret, '{"apiKey":"sk-SECRET"}');
    mkdirSync(join(started.dataDir, 'media', 'outbound'), { recursive: true });
    const linkOut = join(started.dataDir, 'media', 'outbound', 'link.txt');
    symlinkSync(secret, linkOut);
    const dirLink = join(started.dataDir, 'media', 'outbound', 'up');
    symlinkSync(started.dataDir, dirLink);
    // Outside the media dir: no URL at all (the path still goes out, as nanobot sends it).
    for (const path of [secret, join(started.dataDir, 'media', '..', 'config.json'), '/etc/passwd']) {
      const frame = await sendFile(started, c, chatId, path);
      expect(frame.media_urls, path).toBeUndefined();
      expect(frame.media).toEqual([path]);
    }
    // Inside by name, outside in fact: signed, but the opened file decides: 404.
    for (const path of [linkOut, join(dirLink, 'config.json')]) {
      const frame = await sendFile(started, c, chatId, path);
      const url = frame.media_urls?.[0]?.url ?? '';
      expect(url).toMatch(/^\/api\/media\//);
      const res = await api(started, url, { token: null });
      expect(res.status).toBe(404);
      expect(await res.text()).not.toContain('SECRET');
    }
  });
});
