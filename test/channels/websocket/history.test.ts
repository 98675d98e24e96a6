import { describe, expect, it } from 'vitest';
import { runtimeContextBlock, withAttachments } from '../../../src/agent/context.js';
import { historyEntries, sessionTitle } from '../../../src/channels/websocket/history.js';
import type { ChatMessage } from '../../../src/providers/types.js';
import { newSession } from '../../../src/session/types.js';

const block = runtimeContextBlock({ channel: 'websocket', chatId: 'c1' }, 'UTC');

describe('WebUI history', () => {
  it('shows what the user wrote, without the runtime block, and the names of attached files', () => {
    const withFile = withAttachments('look at this', ['/data/media/websocket/123-abc-photo.png'], false);
    const parts = Array.isArray(withFile) ? withFile : [];
    const messages: ChatMessage[] = [
      { role: 'user', content: `hello\n\n${block}` },
      { role: 'assistant', content: 'hi' },
      { role: 'user', content: [...parts, { type: 'text', text: block }] },
    ];
    expect(historyEntries(messages)).toEqual([
      { role: 'user', text: 'hello' },
      { role: 'assistant', text: 'hi', tools: [] },
      { role: 'user', text: 'look at this', media: ['123-abc-photo.png'] },
    ]);
  });

  it('folds a turn’s tool rounds into one assistant entry, each call with its result (cut to a preview)', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'plan',
        tool_calls: [
          { id: 't1', type: 'function', function: { name: 'exec', arguments: '{"command":"ls"}' } },
          { id: 't2', type: 'function', function: { name: 'read_file', arguments: '{"path":"x"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 't1', content: `a.txt\n${'b'.repeat(3000)}` },
      { role: 'tool', tool_call_id: 't2', content: 'Error: no such file' },
      { role: 'assistant', content: 'x'.repeat(3000) },
    ];
    const [, assistant] = historyEntries(messages);
    expect(assistant).toMatchObject({
      role: 'assistant',
      reasoning: 'plan',
      tools: [
        { id: 't1', name: 'exec', arguments: '{"command":"ls"}', is_error: false },
        { id: 't2', name: 'read_file', result: 'Error: no such file', is_error: true },
      ],
    });
    // Answers are shown whole; tool results are cut to a preview.
    expect(assistant?.role === 'assistant' && assistant.text.length).toBe(3000);
    expect(assistant?.role === 'assistant' && assistant.tools[0]?.result).toMatch(
      /^a\.txt\nb+\n… \(1006 more characters\)$/,
    );
  });

  it('titles a chat by its metadata title, else its first message', () => {
    const session = newSession('websocket:c1');
    expect(sessionTitle(session)).toBe('New chat');
    session.messages.push({ role: 'user', content: `${'word '.repeat(30)}\n\n${block}` });
    expect(sessionTitle(session)).toMatch(/^word word .*…$/);
    expect(sessionTitle(session).length).toBeLessThanOrEqual(60);
    session.metadata.title = 'Renamed';
    expect(sessionTitle(session)).toBe('Renamed');
  });
});
