/**
 * framesFor: which frames one outbound message becomes. A turn ends (`turn_end`) only with its own last message,
 * a failed turn arrives as an `error` frame (not as an answer), and command output is marked plain text.
 */
import { describe, expect, it } from 'vitest';
import type { OutboundMessage } from '../../../src/bus/types.js';
import { framesFor } from '../../../src/channels/websocket/outbound.js';

const switches = { sendProgress: true, sendToolHints: true, showReasoning: true };
const frames = (content: string, metadata?: Record<string, unknown>, extra: Partial<OutboundMessage> = {}) =>
  framesFor(
    { channel: 'websocket', chatId: 'c1', content, ...(metadata ? { metadata } : {}), ...extra },
    switches,
    () => ({
      name: 'f',
      kind: 'file',
      url: '/api/media/x',
    }),
  );

describe('framesFor', () => {
  it.each([
    ['a message tool send in the middle of a turn', 'Sent you the file.', { thread_id: 't' }],
    ['a cron reminder', 'Stretch!', undefined],
    ['a subagent report', 'The research is done.', { _wants_events: true }],
  ])('%s does not end the turn', (_what, content, metadata) => {
    expect(frames(content, metadata)).toEqual([{ event: 'message', chat_id: 'c1', text: content }]);
  });

  it('the turn’s reply ends it', () => {
    expect(frames('Done.', { _turn_end: true })).toEqual([
      { event: 'message', chat_id: 'c1', text: 'Done.' },
      { event: 'turn_end', chat_id: 'c1' },
    ]);
    expect(frames('Done!', { _turn_end: true, _stream_id: 's2' })).toEqual([
      { event: 'stream_end', chat_id: 'c1', stream_id: 's2', text: 'Done!' },
      { event: 'turn_end', chat_id: 'c1' },
    ]);
  });

  it('a turn with no reply ends with turn_end alone', () => {
    expect(frames('', { _turn_end: true })).toEqual([{ event: 'turn_end', chat_id: 'c1' }]);
  });

  it('a failed turn is an error frame with its kind and hint, not an answer', () => {
    const failure = {
      kind: 'auth',
      message: 'invalid x-api-key',
      hint: 'Check providers.openai.apiKey in the config.',
    };
    const text = 'Sorry, the model request failed (auth): invalid x-api-key';
    expect(frames(text, { _turn_end: true, _turn_error: failure })).toEqual([
      { event: 'error', chat_id: 'c1', detail: 'invalid x-api-key', kind: 'auth', hint: failure.hint },
      { event: 'turn_end', chat_id: 'c1' },
    ]);
    // What streamed before the failure stays as it streamed; the error follows it.
    expect(frames(`partial\n\n${text}`, { _turn_end: true, _turn_error: failure, _stream_id: 's1' })).toEqual([
      { event: 'stream_end', chat_id: 'c1', stream_id: 's1' },
      { event: 'error', chat_id: 'c1', detail: 'invalid x-api-key', kind: 'auth', hint: failure.hint },
      { event: 'turn_end', chat_id: 'c1' },
    ]);
  });

  it('command output is marked plain text', () => {
    expect(frames('Commands:\n/skill <name> — show one', { _turn_end: true, render_as: 'text' })).toEqual([
      { event: 'message', chat_id: 'c1', text: 'Commands:\n/skill <name> — show one', render_as: 'text' },
      { event: 'turn_end', chat_id: 'c1' },
    ]);
  });
});
