import { describe, expect, it } from 'vitest';
import { toolHint } from '../../src/agent/tool-hint.js';
import { sanitizeForTerminal } from '../../src/cli/render.js';

describe('terminal output', () => {
  it('strips escape sequences a page could use to control the terminal, keeping newlines and tabs', () => {
    const hostile = 'ok\x1b]52;c;ZXZpbA==\x07 \x1b[2J\x1b[31mred\x1b[0m\r\nnext\tcol\x07';
    expect(sanitizeForTerminal(hostile)).toBe('ok red\nnext\tcol');
  });

  it('shows a tool call as name("first argument"), shortened', () => {
    const call = {
      id: '1',
      type: 'function' as const,
      function: { name: 'read_file', arguments: '{"path":"notes/a-very-long-file-name.md"}' },
    };
    expect(toolHint({ type: 'tool-start', call }, 10)).toBe('read_file("notes/a-ve…")');
  });

  it('shows arguments that are not a JSON object as written, not picked apart', () => {
    const hint = (args: string) =>
      toolHint(
        { type: 'tool-start', call: { id: '1', type: 'function', function: { name: 't', arguments: args } } },
        0,
      );
    expect(hint('"abc"')).toBe('t("\\"abc\\"")');
    expect(hint('[1,2]')).toBe('t("[1,2]")');
    expect(hint('null')).toBe('t("null")');
    expect(hint('{"n":3}')).toBe('t("3")');
    expect(hint('{oops')).toBe('t("{oops")');
    expect(hint('')).toBe('t()');
  });
});
