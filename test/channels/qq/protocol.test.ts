/** The QQ gateway protocol in detail: heartbeats with the last seq, a zombie connection, op 7, and the token's lifetime. */
import { afterEach, describe, expect, it } from 'vitest';
import { QqApi } from '../../../src/channels/qq/api.js';
import { eventually } from '../contract.js';
import { APP_ID, SECRET, startFakeQq } from './fake-qq.js';
import { OWNER, type QqGatewayRun, startQqGateway, waitState } from './helpers.js';

const open: QqGatewayRun[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
  for (const close of closers.splice(0)) await close();
});

async function start(fake: Parameters<typeof startQqGateway>[1] = {}) {
  const run = await startQqGateway({ ackMessage: '' }, fake);
  open.push(run);
  await waitState(run.gateway, 'running');
  return run;
}

const ops = (run: QqGatewayRun, op: number) => run.qq.frames.filter((f) => f.op === op);

describe('qq gateway protocol', () => {
  it('heartbeats at the interval Hello gives, each carrying the last sequence number', async () => {
    const run = await start({ heartbeatMs: 40 });
    run.llm.enqueue({ text: 'Beat.' });
    run.qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'hi' });
    await eventually(() => expect(run.qq.messagesIn(OWNER)).toEqual(['Beat.']));
    // READY was s 1, the message s 2.
    await eventually(() => expect(ops(run, 1).at(-1)?.d).toBe(2));
    expect(ops(run, 1).every((f) => f.d === 1 || f.d === 2)).toBe(true);
  });

  it('a gateway that stops answering heartbeats is left, and the session resumed on a new connection', async () => {
    const run = await start({ heartbeatMs: 40 });
    run.qq.ackHeartbeats = false;
    await eventually(() => expect(ops(run, 6)).toHaveLength(1), 20_000);
    run.qq.ackHeartbeats = true;
    await waitState(run.gateway, 'running');
    run.llm.enqueue({ text: 'Alive.' });
    run.qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'hello?' });
    await eventually(() => expect(run.qq.messagesIn(OWNER)).toEqual(['Alive.']));
    expect(ops(run, 2)).toHaveLength(1);
  });

  it('op 7 (reconnect) resumes the same session', async () => {
    const run = await start();
    run.qq.raw(JSON.stringify({ op: 7 }));
    await eventually(() => expect(ops(run, 6)).toHaveLength(1), 20_000);
    expect(ops(run, 6)[0]?.d).toMatchObject({ session_id: 'session-1' });
    await waitState(run.gateway, 'running');
    run.llm.enqueue({ text: 'Same session.' });
    run.qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'again' });
    await eventually(() => expect(run.qq.messagesIn(OWNER)).toEqual(['Same session.']));
  });

  it('keeps the access token until a minute before expires_in, then fetches a new one', async () => {
    const qq = await startFakeQq({ expiresIn: 7200 });
    closers.push(() => qq.close());
    let now = 1_000_000;
    const api = new QqApi({
      appId: APP_ID,
      secret: SECRET,
      apiBase: qq.url,
      tokenUrl: `${qq.url}/app/getAppAccessToken`,
      now: () => now,
    });
    const first = await api.accessToken();
    const [a, b] = await Promise.all([api.accessToken(), api.gatewayUrl()]);
    expect(a).toBe(first);
    expect(b).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/websocket$/);
    now += (7200 - 61) * 1000;
    expect(await api.accessToken()).toBe(first);
    now += 2000;
    const second = await api.accessToken();
    expect(second).not.toBe(first);
    expect(qq.tokensIssued()).toBe(2);
  });
});
