import { describe, expect, it } from 'vitest';
import { callToolResult, getPromptResult, NO_OUTPUT, readResourceResult } from '../../src/mcp/content.js';
import type { ToolResult } from '../../src/tools/types.js';
import { unfence } from '../helpers/fence.js';

/** The result with each text part unfenced (every server text is fenced; images stay as they are). */
function unfenced(result: ToolResult): ToolResult {
  const content =
    typeof result.content === 'string'
      ? unfence(result.content)
      : result.content.map((part) => (part.type === 'text' ? { ...part, text: unfence(part.text) } : part));
  return { ...result, content };
}

const PNG = 'iVBORw0KGgo=';

describe('MCP results for the model', () => {
  it('joins text blocks into one string', () => {
    const result = callToolResult(
      {
        content: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
        ],
      },
      'mcp_demo_tool',
    );
    expect(unfenced(result)).toEqual({ content: 'one\ntwo' });
    expect(result.content).toMatch(/^<<<UNTRUSTED_CONTENT nonce=[0-9a-f]{16} source=mcp_demo_tool>>>\n/);
  });

  it('turns isError into an error result carrying the server message', () => {
    const result = callToolResult({ content: [{ type: 'text', text: 'the widget is broken' }], isError: true });
    expect(unfenced(result)).toEqual({ content: 'the widget is broken', isError: true });
    expect(callToolResult({ content: [], isError: true }).isError).toBe(true);
  });

  it('keeps images as image parts next to the text', () => {
    const result = callToolResult({
      content: [
        { type: 'text', text: 'a dot' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
      ],
    });
    expect(unfenced(result).content).toEqual([
      { type: 'text', text: 'a dot' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
    ]);
  });

  it('shows structured content as JSON when there is no text, and never pastes audio or blobs as base64', () => {
    expect(unfenced(callToolResult({ content: [], structuredContent: { temperature: 21 } })).content).toContain(
      '"temperature": 21',
    );
    const mixed = callToolResult({
      content: [
        { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
        { type: 'resource', resource: { uri: 'file:///a.bin', mimeType: 'application/zip', blob: 'AAAAAAAA' } },
        { type: 'resource', resource: { uri: 'file:///notes.md', text: '# Notes' } },
        { type: 'resource_link', uri: 'file:///big.csv', name: 'big.csv' },
      ],
    });
    expect(unfenced(mixed).content).toBe(
      '[audio (audio/wav), 3 bytes, not shown]\n' +
        '[binary resource file:///a.bin (application/zip), 6 bytes]\n' +
        '[resource file:///notes.md]\n# Notes\n' +
        '[resource link: big.csv file:///big.csv]',
    );
    expect(callToolResult({ content: [] }).content).toBe(NO_OUTPUT);
  });

  it('renders resources and prompts', () => {
    expect(unfenced(readResourceResult({ contents: [{ uri: 'demo://a', text: 'hello' }] })).content).toBe('hello');
    const prompt = getPromptResult({
      description: 'A greeting',
      messages: [{ role: 'user', content: { type: 'text', text: 'Say hi to Paris' } }],
    });
    expect(prompt.content).toBe('A greeting\nuser: Say hi to Paris');
  });
});
