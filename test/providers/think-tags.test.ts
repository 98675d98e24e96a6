import { describe, expect, it } from 'vitest';
import {
  InlineTagSplitter,
  parseTextToolCall,
  type Segment,
  splitOrphanThinkClose,
} from '../../src/providers/think-tags.js';

/** Feeds the chunks and joins what came out, per kind. */
function run(chunks: string[]): { text: string; reasoning: string; toolCalls: string[] } {
  const splitter = new InlineTagSplitter();
  const segments: Segment[] = [...chunks.flatMap((c) => splitter.push(c)), ...splitter.flush()];
  return {
    text: segments
      .filter((s) => s.kind === 'text')
      .map((s) => s.text)
      .join(''),
    reasoning: segments
      .filter((s) => s.kind === 'reasoning')
      .map((s) => s.text)
      .join(''),
    toolCalls: segments.filter((s) => s.kind === 'tool_call').map((s) => s.text),
  };
}

/** Every way of cutting `text` into two chunks, plus one character at a time. */
function splits(text: string): string[][] {
  const out = [[text], Array.from(text)];
  for (let i = 1; i < text.length; i++) out.push([text.slice(0, i), text.slice(i)]);
  return out;
}

describe('InlineTagSplitter', () => {
  it('separates a leading <think> block from the answer, however the stream cuts the tags', () => {
    const reply = '<think>The user greets me.\nReply briefly.</think>\n\nHello! How can I help?';
    for (const chunks of splits(reply)) {
      expect(run(chunks), JSON.stringify(chunks)).toEqual({
        text: 'Hello! How can I help?',
        reasoning: 'The user greets me.\nReply briefly.',
        toolCalls: [],
      });
    }
  });

  it('accepts <thinking> and <thought>, leading whitespace, and consecutive blocks', () => {
    expect(run(['\n  <thinking>a</thinking>', '<think>b</think><thought>c</thought>answer'])).toEqual({
      text: 'answer',
      reasoning: 'abc',
      toolCalls: [],
    });
  });

  it('leaves a <think> that is not at the start of the answer alone', () => {
    const reply = 'Use the <think> tag to wrap reasoning, then </think>.';
    for (const chunks of splits(reply)) expect(run(chunks).text).toBe(reply);
  });

  it('keeps an unclosed think block as reasoning (the model ran out of tokens while thinking)', () => {
    expect(run(['<think>still going', ' on'])).toEqual({ text: '', reasoning: 'still going on', toolCalls: [] });
  });

  it('holds <tool_call> blocks back from the answer text, and releases an unclosed one as text', () => {
    const reply = 'Let me look.<tool_call>{"name":"read_file","arguments":{"path":"a.md"}}</tool_call>';
    for (const chunks of splits(reply)) {
      expect(run(chunks)).toEqual({
        text: 'Let me look.',
        reasoning: '',
        toolCalls: ['{"name":"read_file","arguments":{"path":"a.md"}}'],
      });
    }
    expect(run(['a <tool_c', 'all> b'])).toEqual({ text: 'a <tool_call> b', reasoning: '', toolCalls: [] });
    expect(run(['x <to', 'day'])).toEqual({ text: 'x <today', reasoning: '', toolCalls: [] });
  });
});

describe('inline reasoning and text tool calls, after the fact', () => {
  it('splits a reply whose template opened the think block in the prompt', () => {
    expect(splitOrphanThinkClose('plan it\n</think>\n\nDone.')).toEqual({ reasoning: 'plan it', answer: 'Done.' });
    expect(splitOrphanThinkClose('no tags here')).toBeUndefined();
    expect(splitOrphanThinkClose('<think>a</think>b')).toBeUndefined();
  });

  it('reads the usual shapes of a printed tool call', () => {
    const expected = { type: 'function', function: { name: 'exec', arguments: '{"command":"ls"}' } };
    expect(parseTextToolCall('{"name":"exec","arguments":{"command":"ls"}}')).toMatchObject(expected);
    expect(parseTextToolCall('```json\n{"name":"exec","arguments":"{\\"command\\":\\"ls\\"}"}\n```')).toMatchObject(
      expected,
    );
    expect(parseTextToolCall('{"tool_call":{"function":{"name":"exec","arguments":{"command":"ls"}}}}')).toMatchObject(
      expected,
    );
    expect(parseTextToolCall('{"id":"c1","name":"exec","arguments":{}}')?.id).toBe('c1');
    expect(parseTextToolCall('not json')).toBeUndefined();
    expect(parseTextToolCall('{"arguments":{}}')).toBeUndefined();
  });
});
