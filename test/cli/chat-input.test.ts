/**
 * The chat's input over a terminal-like stream (raw bytes in, as a terminal sends them): bracketed paste is one
 * message with its indentation, Alt+Enter / Shift+Enter / a trailing backslash continue a message, Ctrl+C clears the
 * line at the prompt (and goes to the running turn otherwise), Ctrl+D ends the input.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ChatInput } from '../../src/cli/chat-input.js';

function terminal(onInterrupt?: () => boolean) {
  const input = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => {} });
  const output = Object.assign(new PassThrough(), { isTTY: true, columns: 200, rows: 50 });
  let shown = '';
  output.on('data', (d: Buffer) => {
    shown += d.toString();
  });
  const chat = new ChatInput({ input, output, ...(onInterrupt ? { onInterrupt } : {}) });
  chat.showPrompt();
  return { chat, type: (bytes: string) => input.write(bytes), shown: () => shown, end: () => input.end() };
}

const CODE = 'def f(x):\r    if x:\r        return 1\r    return 0';

describe('ChatInput on a terminal', () => {
  it('switches bracketed paste on, and off again when it closes', () => {
    const { chat, shown } = terminal();
    expect(shown()).toContain('\x1b[?2004h');
    chat.close();
    expect(shown()).toContain('\x1b[?2004l');
  });

  it.each([
    ['a paste that ends with Enter pressed after it', `\x1b[200~${CODE}\x1b[201~\r`],
    ['a paste whose last line ends in a newline', `\x1b[200~${CODE}\r\x1b[201~\r`],
    ['a paste with LF line ends', `\x1b[200~${CODE.replace(/\r/g, '\n')}\x1b[201~\r`],
    ['a paste with CRLF line ends', `\x1b[200~${CODE.replace(/\r/g, '\r\n')}\x1b[201~\r`],
    ['a paste in pieces', `\x1b[200~def f(x):\r    if x:`, `\r        return 1\r    return 0\x1b[201~`, '\r'],
    ['Alt+Enter (ESC CR) between lines', CODE.replace(/\r/g, '\x1b\r'), '\r'],
    ['Alt+Enter on LF terminals (ESC LF)', CODE.replace(/\r/g, '\x1b\n'), '\r'],
    ['Shift+Enter (CSI-u)', CODE.replace(/\r/g, '\x1b[13;2u'), '\r'],
    ['a trailing backslash', `${CODE.replace(/\r/g, '\\\r')}\r`],
  ])('%s is one message, indentation kept', async (_name, ...chunks) => {
    const { chat, type } = terminal();
    for (const chunk of chunks) type(chunk);
    expect(await chat.next()).toBe('def f(x):\n    if x:\n        return 1\n    return 0');
    chat.close();
    expect(await chat.next()).toBeUndefined();
  });

  it('text typed before a paste and after it joins the same message; the next Enter sends the next one', async () => {
    const { chat, type } = terminal();
    type('look at this: \x1b[200~line one\r  line two\x1b[201~ ok?\r');
    type('thanks\r');
    expect(await chat.next()).toBe('look at this: line one\n  line two ok?');
    expect(await chat.next()).toBe('thanks');
  });

  it('separate lines typed with Enter stay separate messages', async () => {
    const { chat, type } = terminal();
    type('first\rsecond\r');
    expect(await chat.next()).toBe('first');
    expect(await chat.next()).toBe('second');
  });

  it('Ctrl+C at the prompt clears the line and the message being written, and the chat goes on', async () => {
    const interrupts: string[] = [];
    const { chat, type, shown } = terminal(() => {
      interrupts.push('asked');
      return false;
    });
    type('half a thought\x03');
    type('line one\x1b\rline two\x03');
    type('\x1b[200~pasted\r\x03');
    type('\x1b[201~fresh\r');
    expect(await chat.next()).toBe('fresh');
    expect(interrupts).toHaveLength(3);
    expect(shown()).toContain('^C');
  });

  it('Ctrl+C while a turn runs goes to the turn, and keeps what was typed', async () => {
    const { chat, type } = terminal(() => true);
    type('still typing\x03');
    type(' more\r');
    expect(await chat.next()).toBe('still typing more');
  });

  it('Ctrl+D on an empty line ends the input; messages sent before it are still read', async () => {
    const { chat, type } = terminal();
    type('last words\r\x04');
    expect(await chat.next()).toBe('last words');
    expect(await chat.next()).toBeUndefined();
  });
});

describe('ChatInput on piped input', () => {
  it('reads one message per line; a trailing backslash continues it; the end of input ends it', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const chat = new ChatInput({ input, output });
    input.end('hello\nfirst \\\n  second\nbye\n');
    expect(await chat.next()).toBe('hello');
    expect(await chat.next()).toBe('first\n  second');
    expect(await chat.next()).toBe('bye');
    expect(await chat.next()).toBeUndefined();
  });
});

describe('ChatInput with stdout piped', () => {
  it('does not write the bracketed-paste switch into the pipe', async () => {
    const input = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => {} });
    const output = new PassThrough();
    let written = '';
    output.on('data', (d: Buffer) => {
      written += d.toString();
    });
    const chat = new ChatInput({ input, output });
    input.write('hi\r');
    expect(await chat.next()).toBe('hi');
    chat.close();
    expect(written).not.toContain('\x1b[?2004');
  });
});
