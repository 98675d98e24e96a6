/** The WebUI's chat state (webui/src/state.ts) as frames arrive: turn ends, errors, and plain-text command output. */
import { describe, expect, it } from 'vitest';
import type { ServerFrame } from '../../src/channels/websocket/frames.js';
import { addUserMessage, applyFrame, type ChatState, emptyChat } from '../../webui/src/state.js';

const apply = (state: ChatState, ...frames: ServerFrame[]) => frames.reduce(applyFrame, state);
const chat_id = 'c1';

describe('WebUI chat state', () => {
  it('a message tool send mid-turn joins the running turn, which stays busy until turn_end', () => {
    let state = addUserMessage(emptyChat, 'send me the file', []);
    state = apply(state, {
      event: 'message',
      chat_id,
      text: 'message',
      kind: 'tool_hint',
      tool_events: [
        {
          version: 1,
          phase: 'start',
          call_id: 't1',
          name: 'message',
          arguments: {},
          result: null,
          error: null,
          files: [],
          embeds: [],
        },
      ],
    });
    state = apply(state, { event: 'message', chat_id, text: 'Here is the file.' });
    expect(state.busy).toBe(true);
    expect(state.items.at(-1)).toMatchObject({ kind: 'assistant', done: false });
    state = apply(
      state,
      { event: 'stream_end', chat_id, stream_id: 's', text: 'Sent it.' },
      { event: 'turn_end', chat_id },
    );
    expect(state.busy).toBe(false);
    expect(state.items).toHaveLength(2);
  });

  it('tool events: each start adds a card, its end or error (by call_id) finishes it; media_urls attach files', () => {
    const event = (phase: 'start' | 'end' | 'error', call_id: string, name: string, extra = {}) => ({
      version: 1 as const,
      phase,
      call_id,
      name,
      arguments: { path: `${call_id}.md` },
      result: null,
      error: null,
      files: [],
      embeds: [],
      ...extra,
    });
    let state = addUserMessage(emptyChat, 'read two files', []);
    state = apply(
      state,
      {
        event: 'message',
        chat_id,
        text: 'read a.md',
        kind: 'tool_hint',
        tool_events: [event('start', 'a', 'read_file')],
      },
      {
        event: 'message',
        chat_id,
        text: 'read b.md',
        kind: 'tool_hint',
        tool_events: [event('start', 'b', 'read_file')],
      },
      {
        event: 'message',
        chat_id,
        text: '',
        kind: 'progress',
        tool_events: [event('error', 'b', 'read_file', { error: 'Error: no b.md' })],
      },
      {
        event: 'message',
        chat_id,
        text: '',
        kind: 'progress',
        tool_events: [event('end', 'a', 'read_file', { result: 'alpha' })],
      },
      {
        event: 'message',
        chat_id,
        text: '',
        media: ['/home/u/.nanobot/media/outbound/1/chart.png'],
        media_urls: [{ url: '/api/media/sig/payload', name: 'chart.png', kind: 'image' }],
      },
    );
    const turn = state.items.at(-1);
    expect(turn?.kind === 'assistant' && turn.blocks).toEqual([
      {
        type: 'tool',
        id: 'a',
        name: 'read_file',
        args: '{"path":"a.md"}',
        result: 'alpha',
        isError: false,
        done: true,
      },
      {
        type: 'tool',
        id: 'b',
        name: 'read_file',
        args: '{"path":"b.md"}',
        result: 'Error: no b.md',
        isError: true,
        done: true,
      },
    ]);
    expect(turn?.kind === 'assistant' && turn.media).toEqual([
      { url: '/api/media/sig/payload', name: 'chart.png', kind: 'image' },
    ]);
    expect(state.busy).toBe(true);
  });

  it('a message while no turn runs (a reminder) is a finished answer and does not make the chat busy', () => {
    const state = apply(emptyChat, { event: 'message', chat_id, text: 'Time to stretch!' });
    expect(state.busy).toBe(false);
    expect(state.items).toEqual([expect.objectContaining({ kind: 'assistant', done: true })]);
  });

  it('an error frame ends the turn with an error note carrying its hint and its kind', () => {
    let state = addUserMessage(emptyChat, 'hi', []);
    state = apply(state, {
      event: 'error',
      chat_id,
      detail: 'invalid x-api-key',
      kind: 'auth',
      hint: 'Check providers.custom.apiKey in the config.',
    });
    expect(state.busy).toBe(false);
    const turn = state.items.at(-1);
    expect(turn?.kind === 'assistant' && turn.blocks).toEqual([
      {
        type: 'note',
        id: expect.any(String),
        text: 'invalid x-api-key',
        tone: 'error',
        hint: 'Check providers.custom.apiKey in the config.',
        kind: 'auth',
      },
    ]);
  });

  it('an error outside a turn (a refused request) is a finished item of its own', () => {
    const state = apply(emptyChat, { event: 'error', chat_id, detail: 'empty message' });
    expect(state).toMatchObject({ busy: false, items: [{ kind: 'assistant', done: true }] });
  });

  it('command output marked render_as text becomes a plain block, kept as written', () => {
    const text = 'Commands:\n/skill [name] — show one: /skill <name>';
    const state = apply(
      addUserMessage(emptyChat, '/help', []),
      { event: 'message', chat_id, text, render_as: 'text' },
      { event: 'turn_end', chat_id },
    );
    const turn = state.items.at(-1);
    expect(turn?.kind === 'assistant' && turn.blocks[0]).toMatchObject({ type: 'text', text, plain: true });
  });
});
