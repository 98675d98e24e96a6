/**
 * `fork_chat` with hostile ids and indexes: a source id that climbs out of the WebSocket chats (path traversal,
 * another channel's session key, separators, control characters, over-long or wrong-typed ids) and user-message
 * indexes that are negative, fractional, past the chat's end, huge or not numbers. Each gets nanobot's error detail
 * (no chat id), nothing is written (no session, no transcript), and the connection stays usable.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeForkGateways, forkFrames, forkGateway, visible } from '../channels/websocket/fork-helpers.js';

afterEach(closeForkGateways);

const BAD_IDS: unknown[] = [
  '../src-chat',
  '..%2Fsrc-chat',
  '/etc/passwd',
  'src-chat/../../x',
  'a\\b',
  'src chat',
  'src-chat\u0000',
  'src-chat\n',
  '',
  'x'.repeat(65),
  'ü-chat',
  7,
  null,
  true,
  ['src-chat'],
  { id: 'src-chat' },
  undefined,
];

/** Ids of the right form that name no WebSocket chat with messages (another channel's key, its own key again). */
const FOREIGN_IDS = ['telegram:42', 'websocket:src-chat', 'cli:direct', 'src-chat:', 'SRC-CHAT', 'no-such-chat'];

const BAD_INDEXES: unknown[] = [-1, -0.5, 1.5, '1', '0', true, null, undefined, [], {}, Number.NaN, 1e308];
/** Well-formed but past the chat's 2 user messages (JSON's 2^53 + 2 parses to an unsafe integer). */
const OUT_OF_RANGE: unknown[] = [3, 4, 1000, 2 ** 31, Number.MAX_SAFE_INTEGER];

describe('fork_chat refuses hostile sources and points, writing nothing', () => {
  it('answers each with nanobot’s error detail and no chat id', async () => {
    const { run, client, api, thread, turn } = await forkGateway(['Answer one.', 'Answer two.']);
    await turn('src-chat', 'first question');
    await turn('src-chat', 'second question');
    // Another channel's chat, which a WebSocket client must not be able to copy.
    const foreign = await run.gateway.agent().sessions.load('telegram:42');
    foreign.messages.push({ role: 'user', content: 'telegram secret' }, { role: 'assistant', content: 'ok' });
    await run.gateway.agent().sessions.save(foreign);
    const cliDirect = await run.gateway.agent().sessions.load('cli:direct');
    cliDirect.messages.push({ role: 'user', content: 'cli secret' });
    await run.gateway.agent().sessions.save(cliDirect);

    const sessionsBefore = (await api('/api/sessions')).body;
    const webuiDir = join(run.dataDir, 'webui');
    const filesBefore = (await readdir(webuiDir)).sort();
    const sourceBefore = await thread('src-chat');

    const cases: [Record<string, unknown>, string][] = [
      ...BAD_IDS.map((id): [Record<string, unknown>, string] => [
        { source_chat_id: id, before_user_index: 1 },
        'invalid source_chat_id',
      ]),
      ...FOREIGN_IDS.map((id): [Record<string, unknown>, string] => [
        { source_chat_id: id, before_user_index: 0 },
        'invalid fork source or index',
      ]),
      ...BAD_INDEXES.map((index): [Record<string, unknown>, string] => [
        { source_chat_id: 'src-chat', before_user_index: index },
        'invalid before_user_index',
      ]),
      ...OUT_OF_RANGE.map((index): [Record<string, unknown>, string] => [
        { source_chat_id: 'src-chat', before_user_index: index },
        'invalid fork source or index',
      ]),
    ];
    for (const [frame, detail] of cases) {
      const frames = await forkFrames(client, frame);
      expect([frame, frames]).toEqual([frame, [{ event: 'error', detail }]]);
    }
    // JSON numbers past 2^53 (not exactly representable) are refused as indexes.
    const from = client.frames.length;
    client.send('{"type":"fork_chat","source_chat_id":"src-chat","before_user_index":9007199254740993}');
    await client.next((f) => client.frames.indexOf(f) >= from && f.event === 'error');
    expect(client.frames.slice(from)).toEqual([{ event: 'error', detail: 'invalid before_user_index' }]);

    expect((await api('/api/sessions')).body).toEqual(sessionsBefore);
    expect((await readdir(webuiDir)).sort()).toEqual(filesBefore);
    expect(await thread('src-chat')).toEqual(sourceBefore);
    expect(cases.length).toBeGreaterThanOrEqual(40);

    // The connection still forks a good request afterwards.
    const ok = await forkFrames(client, { source_chat_id: 'src-chat', before_user_index: 1 });
    const forkId = ok[0]?.event === 'attached' ? ok[0].chat_id : '';
    expect(visible(await thread(forkId))).toEqual(visible(sourceBefore).slice(0, 2));
  });
});
