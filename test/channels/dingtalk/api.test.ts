/** The DingTalk API client against the fake: token caching and renewal, one fetch for many callers, errors. */
import { afterEach, describe, expect, it } from 'vitest';
import { DingtalkApi } from '../../../src/channels/dingtalk/api.js';
import { type FakeDingtalk, startFakeDingtalk } from './fake-dingtalk.js';

const fakes: FakeDingtalk[] = [];
afterEach(async () => {
  for (const fake of fakes.splice(0)) await fake.close();
});

async function setup(expireIn = 7200) {
  const dingtalk = await startFakeDingtalk({ expireIn });
  fakes.push(dingtalk);
  let now = 1_000_000;
  const api = new DingtalkApi({
    clientId: String(dingtalk.settings.clientId),
    clientSecret: String(dingtalk.settings.clientSecret),
    apiBase: dingtalk.url,
    oapiBase: dingtalk.url,
    now: () => now,
  });
  return { dingtalk, api, advance: (ms: number) => (now += ms) };
}

describe('dingtalk api', () => {
  it('keeps the access token until five minutes before expireIn, and fetches it once for concurrent callers', async () => {
    const { dingtalk, api, advance } = await setup(7200);
    const tokens = await Promise.all([api.accessToken(), api.accessToken(), api.accessToken()]);
    expect(new Set(tokens).size).toBe(1);
    expect(dingtalk.tokenRequests()).toBe(1);
    advance((7200 - 5 * 60 - 1) * 1000);
    expect(await api.accessToken()).toBe(tokens[0]);
    advance(2000);
    expect(await api.accessToken()).not.toBe(tokens[0]);
    expect(dingtalk.tokenRequests()).toBe(2);
  });

  it('a refused token is renewed once and the call made again; uploads too (errcode 40014)', async () => {
    const { dingtalk, api } = await setup();
    await api.sendRobotMessage({ kind: 'user', userId: 'u1' }, 'sampleText', { content: 'a' });
    dingtalk.expireTokens();
    await api.sendRobotMessage({ kind: 'group', conversationId: 'cid1' }, 'sampleText', { content: 'b' });
    dingtalk.expireTokens();
    expect(await api.upload('file', Buffer.from('x'), 'x.pdf', 'application/pdf')).toBe('@media-1');
    expect(dingtalk.refusedTokens()).toBe(2);
    expect(dingtalk.tokenRequests()).toBe(3);
    expect(dingtalk.messagesIn('u1')).toEqual(['a']);
    expect(dingtalk.messagesIn('group:cid1')).toEqual(['b']);
  });

  it('names the endpoint and DingTalk’s code on an error, never the token', async () => {
    const { dingtalk, api } = await setup();
    const error = await api.downloadUrl('no-such-code').catch((err: unknown) => err as Error);
    expect(String(error)).toMatch(/messageFiles\/download with HTTP 400 invalidDownloadCode/);
    for (const token of dingtalk.tokens()) expect(String(error)).not.toContain(token);
    dingtalk.drop();
    const down = await api
      .sendRobotMessage({ kind: 'user', userId: 'u1' }, 'sampleText', { content: 'a' })
      .catch((err: unknown) => err as Error);
    expect(String(down)).toMatch(/HTTP 503/);
  });
});
