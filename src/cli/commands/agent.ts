/**
 * `nanobot agent`: `-m` sends one message and prints the answer on stdout (progress on stderr);
 * without `-m` it is an interactive chat.
 */
import type { TurnOutput } from '../../agent/loop.js';
import type { RunnerEvent } from '../../agent/runner.js';
import { toolHint } from '../../agent/tool-hint.js';
import { type Agent, createAgent } from '../../app/agent.js';
import { secretsOf } from '../../security/secrets.js';
import { UNIFIED_SESSION_KEY } from '../../session/keys.js';
import { errorMessage, UserError } from '../../util/errors.js';
import { createLogger, type Logger, logFailure } from '../../util/log.js';
import { ChatInput } from '../chat-input.js';
import { installLastResort } from '../last-resort.js';
import type { AgentFlags, GlobalOptions } from '../main.js';
import { WaitIndicator } from '../progress.js';
import { describeProviderError, renderMarkdown, rowsOf, sanitizeForTerminal } from '../render.js';
import { setup } from '../setup.js';

const EXIT_WORDS = new Set(['exit', 'quit', '/exit', '/quit', ':q']);

/** `🐈 nanobot: ` — agents.defaults.botIcon and botName (nanobot's CLI header); an empty icon is left out. */
export function botLabel(defaults: { botName: string; botIcon: string }): string {
  const name = sanitizeForTerminal(defaults.botName).trim() || 'nanobot';
  const icon = sanitizeForTerminal(defaults.botIcon).trim();
  return `${icon ? `${icon} ` : ''}${name}: `;
}

type ChatFlags = AgentFlags & { label: string };

export async function runAgent(opts: GlobalOptions & AgentFlags): Promise<void> {
  const { loaded } = await setup(opts);
  const log = createLogger(opts.verbose ? 'debug' : opts.logs ? 'info' : 'warn');
  let stopping: (() => Promise<void>) | undefined;
  const uninstall = installLastResort({
    surface: 'nanobot agent',
    log,
    secrets: () => secretsOf(loaded.config),
    shutdown: () => stopping?.() ?? Promise.resolve(),
  });
  const agent = await createAgent(loaded, { log });
  stopping = () => agent.shutdown();
  // Which model nanobot chose when none is configured (createAgent logs it at info, shown only with --logs).
  if (agent.model.autoChosen && !opts.logs && !opts.verbose) process.stderr.write(`${agent.model.autoChosen}\n`);
  const hintMax = loaded.config.agents.defaults.toolHintMaxLength;
  const delivery = new AbortController();
  const printing = printOutbound(agent, delivery.signal);
  try {
    // As in nanobot, the interactive chat is a channel like the others: with unifiedSession it joins the one
    // shared conversation; `-m` keeps the session it names.
    const unified = loaded.config.agents.defaults.unifiedSession;
    const waitLimit = `NANOBOT_LLM_TIMEOUT_S=${loaded.runtime.llmTimeoutMs / 1000} bounds the wait for a reply to start`;
    if (opts.message === undefined) {
      const label = botLabel(loaded.config.agents.defaults);
      return await chat(
        agent,
        { ...opts, label, ...(unified ? { session: UNIFIED_SESSION_KEY } : {}) },
        hintMax,
        waitLimit,
      );
    }
    await oneShot(agent, opts, hintMax, waitLimit);
    await awaitSubagents(agent, log);
  } finally {
    delivery.abort();
    await printing;
    await agent.shutdown();
    uninstall();
  }
}

/** Background subagents report back before a one-shot run ends; their follow-up answers are printed. Ctrl+C cancels. */
async function awaitSubagents(agent: Agent, log: Logger): Promise<void> {
  const idle = agent.subagents.idle();
  let timer: NodeJS.Timeout | undefined;
  const slow = new Promise<boolean>((resolve) => {
    timer = setTimeout(resolve, 50, true);
  });
  const pending = await Promise.race([idle.then(() => false), slow]);
  clearTimeout(timer); // an armed timer would hold every one-shot run open for its 50 ms
  if (!pending) return;
  process.stderr.write('  … waiting for background subagents to report (Ctrl+C to cancel them)\n');
  const cancel = () => void agent.subagents.shutdown().catch(logFailure(log, 'cancelling subagents failed'));
  process.once('SIGINT', cancel);
  try {
    await idle;
  } finally {
    process.off('SIGINT', cancel);
  }
}

/** Shows what the agent sends on its own (the `message` tool). Other channels are served by `nanobot gateway`. */
async function printOutbound(agent: Agent, signal: AbortSignal): Promise<void> {
  // Ends once aborted and drained: messages published before the abort are still printed.
  for (;;) {
    const message = await agent.bus.consumeOutbound(signal).catch(() => undefined);
    if (!message) return;
    if (message.channel !== 'cli') {
      process.stderr.write(
        `  ✉ not delivered to ${message.channel}:${message.chatId} (channels run in \`nanobot gateway\`)\n`,
      );
      continue;
    }
    const files = message.media?.length ? `\n  [attached: ${message.media.join(', ')}]` : '';
    process.stdout.write(`${sanitizeForTerminal(message.content)}${files}\n`);
  }
}

function turnInput(session: string, content: string) {
  // The shared session of unifiedSession: this terminal is still chat cli:direct in it.
  if (session === UNIFIED_SESSION_KEY)
    return { channel: 'cli', chatId: 'direct', content, sessionKey: UNIFIED_SESSION_KEY };
  const chatId = session.startsWith('cli:') ? session.slice(4) : session;
  return { channel: 'cli', chatId, content, sessionKey: session };
}

/**
 * Streams a turn to the terminal: text deltas on stdout (after an optional label), tool hints and retries on stderr.
 * Remembers the text streamed since the last tool hint, so it can be replaced by rendered Markdown at the end.
 */
class TurnPrinter {
  /** Text streamed since the last tool hint, including the label if it was printed in this stretch. */
  private segment = '';
  private streamedAny = false;

  constructor(
    private readonly hintMax: number,
    private readonly streamText: boolean,
    private readonly label = '',
    /** Shows every wait of over a second on stderr (progress.ts); `waiting` starts it for the turn. */
    private readonly waiting = new WaitIndicator(process.stderr),
  ) {
    waiting.wait('waiting for the model');
  }

  readonly onEvent = (event: RunnerEvent): void => {
    if (event.type === 'model-request') {
      this.waiting.wait('waiting for the model');
    } else if (event.type === 'tool-start') {
      this.waiting.done();
      this.endLine();
      process.stderr.write(`  ↳ ${toolHint(event, this.hintMax)}\n`);
      this.waiting.wait(`running ${sanitizeForTerminal(event.call.function.name).slice(0, 40)}`);
    } else if (event.type === 'tool-end') {
      this.waiting.done();
    } else if (event.type === 'retry-wait') {
      this.waiting.done();
      this.endLine();
      const why = event.error.message.replace(/\.$/, '');
      process.stderr.write(`  … ${why}; retrying in ${Math.ceil(event.delayMs / 1000)} s\n`);
      this.waiting.wait('waiting for the model (retry)');
    } else if (event.type === 'text-delta' && event.text) {
      this.waiting.done();
      if (!this.streamText) return;
      if (!this.streamedAny && this.label) this.write(this.label);
      this.streamedAny = true;
      this.write(event.text);
    }
  };

  /** The turn is over: no spinner may outlive it. */
  finish(): void {
    this.waiting.done();
  }

  /** The text on screen since the last hint (label included), or '' when nothing was streamed. */
  get visibleSegment(): string {
    return this.segment;
  }

  private write(text: string): void {
    const clean = sanitizeForTerminal(text);
    this.segment += clean;
    process.stdout.write(clean);
  }

  private endLine(): void {
    if (this.segment && !this.segment.endsWith('\n')) process.stdout.write('\n');
    this.segment = '';
  }
}

function failIfError(output: TurnOutput, agent: Agent): void {
  if (!output.error || output.stopReason === 'aborted') return;
  const { message, hint } = describeProviderError(output.error, agent.provider.name);
  throw new UserError(message, hint);
}

async function oneShot(agent: Agent, opts: AgentFlags, hintMax: number, waitLimit: string): Promise<void> {
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  process.once('SIGINT', onSigint);
  const tty = process.stdout.isTTY === true;
  const printer = new TurnPrinter(hintMax, tty, '', new WaitIndicator(process.stderr, { limit: waitLimit }));
  try {
    const output = await agent.loop.processMessage(turnInput(opts.session, opts.message ?? ''), {
      signal: controller.signal,
      onEvent: printer.onEvent,
    });
    if (output.stopReason === 'aborted') throw new UserError('Cancelled.');
    // A failed turn keeps what streamed before the failure (a stalled stream): on stdout, before the error.
    if (output.error && output.content && !printer.visibleSegment.trim()) process.stdout.write(`${output.content}\n`);
    else if (output.error && printer.visibleSegment.trim()) process.stdout.write('\n');
    failIfError(output, agent);
    const streamed = printer.visibleSegment.trim();
    if (streamed && sanitizeForTerminal(output.content).endsWith(streamed)) process.stdout.write('\n');
    else process.stdout.write(`${tty ? sanitizeForTerminal(output.content) : output.content}\n`);
  } finally {
    printer.finish();
    process.off('SIGINT', onSigint);
  }
}

async function chat(agent: Agent, opts: ChatFlags, hintMax: number, waitLimit: string): Promise<void> {
  const tty = process.stdout.isTTY === true;
  let running: AbortController | undefined;
  // Ctrl+C stops a running turn; at the prompt it clears the line (ChatInput). Ctrl+D or /exit leaves.
  const input = new ChatInput({
    input: process.stdin,
    output: process.stdout,
    onInterrupt: () => {
      if (!running) return false;
      running.abort();
      return true;
    },
  });
  process.stdout.write(
    `${opts.label.replace(/: $/, '')} · ${agent.model.model} via ${agent.provider.name} · /exit or Ctrl+D to leave\n` +
      'Alt+Enter (or a line ending in \\) starts a new line; a paste is one message; Ctrl+C clears the line\n\n',
  );
  input.showPrompt();
  // Messages written while a turn runs wait in ChatInput's queue and are answered in order.
  for (let text = await input.next(); text !== undefined; text = await input.next()) {
    if (EXIT_WORDS.has(text.trim().toLowerCase())) break;
    if (text.trim()) {
      running = new AbortController();
      try {
        await chatTurn(agent, opts, hintMax, tty, text, running.signal, waitLimit);
      } catch (err) {
        // A turn that failed (e.g. its session could not be saved) ends that turn, not the chat.
        process.stdout.write(`\nError: ${sanitizeForTerminal(errorMessage(err))}\n\n`);
      } finally {
        running = undefined;
      }
    }
    input.showPrompt();
  }
  input.close();
}

async function chatTurn(
  agent: Agent,
  opts: ChatFlags,
  hintMax: number,
  tty: boolean,
  text: string,
  signal: AbortSignal,
  waitLimit: string,
): Promise<void> {
  const printer = new TurnPrinter(hintMax, tty, opts.label, new WaitIndicator(process.stderr, { limit: waitLimit }));
  process.stdout.write('\n');
  const output = await agent.loop
    .processMessage(turnInput(opts.session, text), { signal, onEvent: printer.onEvent })
    .finally(() => printer.finish());
  if (output.stopReason === 'aborted') {
    process.stdout.write('\n(cancelled)\n\n');
  } else if (output.error) {
    const { message, hint } = describeProviderError(output.error, agent.provider.name);
    process.stdout.write(`\nError: ${message}\nHint: ${hint}\n\n`);
  } else {
    // Command output (/help, /status) is preformatted text: Markdown would join its lines into one paragraph.
    const markdown = tty && opts.markdown && output.stopReason !== 'command';
    await showAnswer(output.content, printer.visibleSegment, markdown, opts.label);
  }
}

/** Replaces the raw streamed text with its rendered Markdown (or prints the answer if nothing streamed). */
async function showAnswer(answer: string, onScreen: string, markdown: boolean, label: string): Promise<void> {
  const rows = onScreen ? rowsOf(onScreen, process.stdout.columns || 80) : 0;
  // Text taller than the screen has scrolled out of reach: leave it as it streamed.
  if (onScreen && (!markdown || rows >= (process.stdout.rows || 24))) {
    process.stdout.write('\n\n');
    return;
  }
  if (onScreen) {
    process.stdout.moveCursor(0, -(rows - 1));
    process.stdout.cursorTo(0);
    process.stdout.clearScreenDown();
  }
  const clean = sanitizeForTerminal(answer);
  const body = markdown ? await renderMarkdown(clean, Math.min(process.stdout.columns || 80, 100)) : clean;
  process.stdout.write(`${label.trim()}\n${body}\n\n`);
}
