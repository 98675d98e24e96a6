/**
 * nanobot's `fork_chat {source_chat_id, before_user_index, title?}` (its WebUI's "branch from here", its terminal
 * UI's `/branch`), against a real gateway: the answer is `attached` then `session_updated {scope: "metadata"}` for
 * a new chat id; the new chat's thread is the source's up to the chosen user message (with nanobot's
 * `fork_boundary_message_count`); the source is unchanged; the fork is listed and takes turns of its own.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { publicContent, RUNTIME_CONTEXT_FIELD } from '../../../src/session/runtime-context.js';
import { gate } from '../../helpers/eventually.js';
import { closeForkGateways, forkFrames, forkGateway, visible } from './fork-helpers.js';

afterEach(closeForkGateways);

describe('fork_chat', () => {
  it('answers attached + session_updated for a new chat holding the source up to the chosen user message', async () => {
    const { client, api, thread, turn } = await forkGateway(['Answer one.', 'Answer two.', 'Answer three.', 'Fork.']);
    await turn('src-chat', 'first question');
    await turn('src-chat', 'second question');
    await turn('src-chat', 'third question');
    const sourceBefore = await thread('src-chat');
    const listBefore = await api('/api/sessions');

    const frames = await forkFrames(client, {
      source_chat_id: 'src-chat',
      before_user_index: 2,
      title: 'Title: "My branch."',
    });
    const forkId = frames[0]?.event === 'attached' ? frames[0].chat_id : '';
    expect(forkId).toMatch(/^[0-9a-f-]{36}$/);
    expect(frames).toEqual([
      { event: 'attached', chat_id: forkId },
      { event: 'session_updated', chat_id: forkId, scope: 'metadata' },
    ]);

    const forked = await thread(forkId);
    const cut = visible(sourceBefore).findIndex((m) => m.role === 'user' && m.content === 'third question');
    expect(visible(forked)).toEqual(visible(sourceBefore).slice(0, cut));
    expect(forked.fork_boundary_message_count).toBe(cut);
    expect(await thread('src-chat')).toEqual(sourceBefore);

    const rows = (await api('/api/sessions')).body.sessions as { key: string; title: string }[];
    expect(rows.find((r) => r.key === `websocket:${forkId}`)).toMatchObject({ title: 'My branch' });
    const sourceRow = (listBefore.body.sessions as { key: string }[]).find((r) => r.key === 'websocket:src-chat');
    expect(rows.find((r) => r.key === 'websocket:src-chat')).toEqual(sourceRow);

    // The fork takes its own turns; the source does not see them.
    await turn(forkId, 'a different third question');
    const after = visible(await thread(forkId));
    expect(after.slice(0, cut)).toEqual(visible(sourceBefore).slice(0, cut));
    expect(after.slice(cut)).toEqual([
      { role: 'user', content: 'a different third question' },
      { role: 'assistant', content: 'Fork.' },
    ]);
    expect(await thread('src-chat')).toEqual(sourceBefore);
  });

  it('copies the whole chat for an index equal to its user-message count, and nothing for 0', async () => {
    const { client, run, thread, turn } = await forkGateway(['Answer one.', 'Answer two.']);
    await turn('src-chat', 'first question');
    await turn('src-chat', 'second question');
    const source = await thread('src-chat');
    const whole = await forkFrames(client, { source_chat_id: 'src-chat', before_user_index: 2 });
    const wholeId = whole[0]?.event === 'attached' ? whole[0].chat_id : '';
    expect(visible(await thread(wholeId))).toEqual(visible(source));
    const session = await run.gateway.agent().sessions.load(`websocket:${wholeId}`);
    const original = await run.gateway.agent().sessions.load('websocket:src-chat');
    // As nanobot's public history: the runtime context a turn added is left out of the copy.
    expect(session.messages.map((m) => [m.role, m.content])).toEqual(
      original.messages.map((m) => [m.role, publicContent(m)]),
    );
    expect(session.messages.some((m) => RUNTIME_CONTEXT_FIELD in m)).toBe(false);
    expect(session.metadata.title).toBeUndefined();

    const empty = await forkFrames(client, { source_chat_id: 'src-chat', before_user_index: 0 });
    const emptyId = empty[0]?.event === 'attached' ? empty[0].chat_id : '';
    expect((await run.gateway.agent().sessions.load(`websocket:${emptyId}`)).messages).toEqual([]);
  });

  it('forks a chat whose turn is running (nanobot does not refuse it): the fork has the finished turns only', async () => {
    const reached = gate();
    const slow = async () => {
      reached.open();
      await new Promise((resolve) => setTimeout(resolve, 30_000).unref());
      return { text: 'too slow' };
    };
    const { client, thread, turn } = await forkGateway(['Answer one.', slow]);
    await turn('busy-chat', 'first question');
    const finished = visible(await thread('busy-chat'));
    client.send({ type: 'message', chat_id: 'busy-chat', content: 'think long', turn_id: 'slow-1', webui: true });
    await reached.promise;
    const frames = await forkFrames(client, { source_chat_id: 'busy-chat', before_user_index: 1 });
    // The running turn's own frames may come in between; the fork's are attached, then session_updated.
    const attached = frames.find((f) => f.event === 'attached');
    const forkId = attached?.event === 'attached' ? attached.chat_id : '';
    const own = frames.filter((f) => 'chat_id' in f && f.chat_id === forkId);
    expect(own).toEqual([
      { event: 'attached', chat_id: forkId },
      { event: 'session_updated', chat_id: forkId, scope: 'metadata' },
    ]);
    expect(frames.some((f) => f.event === 'error')).toBe(false);
    const forked = await thread(forkId);
    expect(visible(forked)).toEqual(finished);
    expect(forked).toMatchObject({ has_pending_tool_calls: false, active_turn_id: null });
  });
});
