/**
 * Attacks on the Mattermost channel: a server URL the token must not travel to, replies that would ping a whole
 * channel, hostile or malformed WebSocket events, file ids that try to leave /api/v4/files, and download redirects
 * that would carry the token to another host.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { mattermostChannel } from '../../src/channels/mattermost/index.js';
import { withoutGroupPings } from '../../src/channels/mattermost/rest.js';
import { eventually } from '../channels/contract.js';
import { BOT } from '../channels/mattermost/fake-mattermost.js';
import {
  type MattermostGateway,
  OWNER,
  OWNER_DM,
  startMattermostGateway,
  waitState,
} from '../channels/mattermost/helpers.js';

const REFUSED_SERVER_URLS = [
  'http://chat.example.com',
  'http://chat.example.com:8065',
  'HTTP://chat.example.com',
  'http://127.0.0.1.nip.io',
  'http://localhost.example.com',
  'http://10.0.0.5:8065',
  'http://192.168.1.10',
  'ws://chat.example.com',
  'ftp://chat.example.com',
  'javascript:alert(1)',
  'file:///etc/passwd',
  'chat.example.com',
  'https://user:pass@chat.example.com',
  'https://token@chat.example.com',
  'https://chat.example.com/?next=http://evil',
  'https://chat.example.com/#fragment',
  'https://chat.example.com /x',
  ' https://chat example.com',
];
const ACCEPTED_SERVER_URLS = [
  'https://chat.example.com',
  'https://chat.example.com/',
  'https://example.com/mattermost',
  'http://127.0.0.1:8065',
  'http://localhost:8065',
  'http://[::1]:8065',
];

describe('mattermost serverUrl: the token travels only over https (or to this machine)', () => {
  it.each(REFUSED_SERVER_URLS)('refuses %s', (serverUrl) => {
    expect(() => mattermostChannel.parse({ enabled: true, serverUrl, token: 't' })).toThrow(
      /channels\.mattermost\.serverUrl/,
    );
  });
  it.each(ACCEPTED_SERVER_URLS)('accepts %s', (serverUrl) => {
    expect(() => mattermostChannel.parse({ enabled: true, serverUrl, token: 't' })).not.toThrow();
  });
});

const PINGS = [
  '@channel',
  '@all',
  '@here',
  '@CHANNEL',
  '@All',
  'hey @here!',
  '(@channel)',
  '**@channel**',
  '_@all_',
  '@channel.',
  '@here,',
  'line one\n@all line two',
  '> @channel',
  '- @here',
  '`x` @all',
  '@channel@here',
];

describe('mattermost replies never ping a whole channel', () => {
  it.each(PINGS)('neutralises %j', (text) => {
    const out = withoutGroupPings(text);
    expect(out).not.toMatch(/(^|[^\w@\u200b])@(channel|all|here)\b/i);
    expect(out.replace(/\u200b/g, '')).toBe(text);
  });
  it.each(['@alice', 'mail me at bob@here.com', '@channel123', '@allison', '@hereford'])('leaves %j alone', (text) => {
    expect(withoutGroupPings(text)).toBe(text);
  });
});

describe('mattermost: hostile events and file ids through the gateway', () => {
  const open: MattermostGateway[] = [];
  const servers: http.Server[] = [];
  afterEach(async () => {
    for (const run of open.splice(0)) await run.close();
    for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
  });

  async function start() {
    const run = await startMattermostGateway();
    open.push(run);
    await waitState(run.gateway, 'running');
    run.mm.addUser(OWNER.id, OWNER.username);
    run.mm.addChannel(OWNER_DM, 'D');
    return run;
  }

  const post = (fields: Record<string, unknown>) =>
    JSON.stringify({
      id: `hostile${Math.random().toString(36).slice(2, 12)}`,
      create_at: Date.now(),
      user_id: OWNER.id,
      channel_id: OWNER_DM,
      message: 'hostile',
      ...fields,
    });

  it('ignores malformed, self-sent, system and deleted posts, and keeps serving', async () => {
    const run = await start();
    const hostile: Record<string, unknown>[] = [
      { channel_type: 'D', post: '{not json' },
      { channel_type: 'D', post: 'null' },
      { channel_type: 'D', post: '[]' },
      { channel_type: 'D', post: 42 },
      { channel_type: 'D' },
      { channel_type: 'D', post: JSON.stringify({ message: 'no id' }) },
      { channel_type: 'D', post: post({ user_id: BOT.id, message: 'my own words' }) },
      { channel_type: 'D', post: post({ type: 'system_join_channel', message: 'joined' }) },
      { channel_type: 'D', post: post({ delete_at: Date.now(), message: 'deleted' }) },
      { channel_type: 'D', post: post({ user_id: '', message: 'nobody' }) },
      { channel_type: 'D', post: post({ channel_id: '', message: 'nowhere' }) },
      { channel_type: 'D', post: post({ message: 42 }) },
      { channel_type: 'D', post: post({ file_ids: 'not-a-list' }) },
    ];
    for (const data of hostile) run.mm.injectEvent('posted', data);
    run.mm.injectEvent('posted', { post: post({}) }, { team_id: 7 });
    run.llm.enqueue({ text: 'Still fine.' });
    run.mm.userSays({ channelId: OWNER_DM, kind: 'dm', user: OWNER, text: 'are you ok?' });
    await eventually(() => expect(run.mm.messagesIn(OWNER_DM).map((p) => p.message)).toEqual(['Still fine.']));
    expect(run.llm.requests).toHaveLength(1);
    expect(JSON.stringify(run.llm.requests[0]?.body.messages)).not.toMatch(/my own words|joined|deleted|nobody/);
  });

  it('downloads a file only from /api/v4/files/<id>, whatever the id says', async () => {
    const run = await start();
    const ids = ['../../users/me', '..%2F..%2Fusers%2Fme', 'x?token=1', 'x#y', '/etc/passwd', 'a/../../b'];
    run.llm.enqueue({ text: 'Looked.' });
    const files = ids.map((id) => ({ id, name: 'x.png', mime_type: 'image/png', size: 3 }));
    run.mm.injectEvent('posted', { channel_type: 'D', post: post({ message: 'files', metadata: { files } }) });
    await eventually(() => expect(run.mm.messagesIn(OWNER_DM)).toHaveLength(1));
    const downloads = run.mm.calls.filter((c) => c.method === 'GET' && !/^\/api\/v4\/(users|channels)\//.test(c.path));
    expect(downloads).toHaveLength(ids.length);
    for (const call of downloads) expect(call.path).toMatch(/^\/api\/v4\/files\/[^/]+$/);
  });

  it('follows a download redirect to another host without the token, and never to plain http elsewhere', async () => {
    const run = await start();
    const seen: (string | undefined)[] = [];
    const bucket = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200, { 'Content-Type': 'image/png' });
      res.end(Buffer.from([1, 2, 3]));
    });
    servers.push(bucket);
    await new Promise<void>((resolve) => bucket.listen(0, '127.0.0.1', resolve));
    const port = (bucket.address() as AddressInfo).port;
    // Another origin on this machine (plain http is allowed for loopback), then a remote plain-http one.
    run.mm.redirectFile('tobucket', `http://localhost:${port}/signed?sig=1`);
    run.mm.redirectFile('toremote', 'http://files.example.com/leak');
    run.llm.enqueue({ text: 'Got it.' });
    const files = [
      { id: 'tobucket', name: 'a.png', mime_type: 'image/png', size: 3 },
      { id: 'toremote', name: 'b.png', mime_type: 'image/png', size: 3 },
    ];
    run.mm.injectEvent('posted', { channel_type: 'D', post: post({ message: 'two files', metadata: { files } }) });
    await eventually(() => expect(run.mm.messagesIn(OWNER_DM)).toHaveLength(1));
    expect(seen).toEqual([undefined]);
    const sent = JSON.stringify(run.llm.requests[0]?.body.messages);
    expect(sent).toContain('data:image/png;base64,AQID');
    expect(sent).toMatch(/b\.png not received: .*https/);
  });
});
