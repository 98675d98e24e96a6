/**
 * The interactive chat's input: one message per Enter, where a message may span lines.
 * - A paste arrives as one message, indentation kept: on a terminal, bracketed paste is switched on (ESC[?2004h) and
 *   the newlines between ESC[200~ and ESC[201~ start a new line of the same message instead of sending it.
 * - Alt+Enter (ESC CR / ESC LF) and Shift+Enter (CSI-u ESC[13;2u) start a new line, as in nanobot's prompt; a line
 *   ending in `\` does too (the backslash is dropped), for terminals that send neither and for piped input.
 * - Ctrl+C clears the line (and a message being written) at the prompt; while a turn runs it goes to `onInterrupt`.
 *   Ctrl+D on an empty line ends the input.
 */
import { createInterface, type Interface, type Key } from 'node:readline';

export interface ChatInputOptions {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream & { isTTY?: boolean };
  prompt?: string;
  continuation?: string;
  /** Ctrl+C: returns true when it was handled (a turn was stopped); otherwise the line is cleared. */
  onInterrupt?: () => boolean;
}

const PASTE_ON = '\x1b[?2004h';
const PASTE_OFF = '\x1b[?2004l';
const SHIFT_ENTER = '\x1b[13;2u';

export class ChatInput {
  private readonly rl: Interface;
  private readonly terminal: boolean;
  private readonly pasteMode: boolean;
  private readonly prompt: string;
  private readonly continuation: string;
  private readonly queue: string[] = [];
  private waiter: ((message: string | undefined) => void) | undefined;
  private pending: string[] = [];
  private inPaste = false;
  private softBreak = false;
  private closed = false;

  constructor(private readonly options: ChatInputOptions) {
    this.terminal = options.input.isTTY === true;
    this.prompt = options.prompt ?? 'You: ';
    this.continuation = options.continuation ?? '... ';
    this.rl = createInterface({ input: options.input, output: options.output, terminal: this.terminal });
    this.rl.setPrompt(this.prompt);
    // Only a terminal on both ends: the switch goes to the screen (never into a file stdout is piped to).
    this.pasteMode = this.terminal && options.output.isTTY === true;
    if (this.pasteMode) options.output.write(PASTE_ON);
    if (this.terminal) {
      // Ahead of readline's own listener, so the paste state is right when readline emits the line.
      options.input.prependListener('keypress', this.onKeypress);
    }
    this.rl.on('line', this.onLine);
    this.rl.on('SIGINT', this.onSigint);
    this.rl.on('close', () => {
      this.closed = true;
      if (this.terminal) options.input.off('keypress', this.onKeypress);
      if (this.pasteMode) options.output.write(PASTE_OFF);
      this.waiter?.(undefined);
      this.waiter = undefined;
    });
  }

  /** Shows the prompt (the continuation prompt inside a message being written). */
  showPrompt(): void {
    if (!this.closed) this.rl.prompt();
  }

  /** The next message, or undefined once the input ended (Ctrl+D, end of stdin). */
  next(): Promise<string | undefined> {
    const message = this.queue.shift();
    if (message !== undefined) return Promise.resolve(message);
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  close(): void {
    this.rl.close();
  }

  private readonly onKeypress = (_text: string | undefined, key: Key | undefined): void => {
    if (!key) return;
    if (key.name === 'paste-start') this.inPaste = true;
    else if (key.name === 'paste-end') this.inPaste = false;
    else if ((key.meta && (key.name === 'return' || key.name === 'enter')) || key.sequence === SHIFT_ENTER) {
      // readline ignores these keys; end the line here and keep the message open.
      this.softBreak = true;
      this.rl.write(null, { name: 'return' });
    }
  };

  private readonly onLine = (line: string): void => {
    if (this.inPaste || this.softBreak) {
      this.softBreak = false;
      this.continueWith(line);
      return;
    }
    if (line.endsWith('\\')) {
      this.continueWith(line.slice(0, -1));
      return;
    }
    const message = tidy([...this.pending, line]);
    this.pending = [];
    this.rl.setPrompt(this.prompt);
    this.deliver(message);
  };

  private continueWith(line: string): void {
    this.pending.push(line);
    this.rl.setPrompt(this.continuation);
    this.rl.prompt();
  }

  private deliver(message: string): void {
    if (this.waiter) {
      const waiter = this.waiter;
      this.waiter = undefined;
      waiter(message);
    } else {
      this.queue.push(message);
    }
  }

  private readonly onSigint = (): void => {
    if (this.options.onInterrupt?.()) return;
    // At the prompt: drop the line and any message being written, and start again on a fresh line.
    this.pending = [];
    this.inPaste = false;
    this.rl.write(null, { ctrl: true, name: 'e' });
    this.rl.write(null, { ctrl: true, name: 'u' });
    this.options.output.write('^C\n');
    this.rl.setPrompt(this.prompt);
    this.rl.prompt();
  };
}

/** One line: trimmed, as before. Several: blank lines around dropped and trailing spaces cut; indentation kept. */
function tidy(lines: string[]): string {
  if (lines.length === 1) return (lines[0] ?? '').trim();
  const kept = lines.map((line) => line.trimEnd());
  while (kept.length && kept[0] === '') kept.shift();
  while (kept.length && kept.at(-1) === '') kept.pop();
  return kept.join('\n');
}
