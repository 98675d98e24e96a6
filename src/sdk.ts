/**
 * The embedding API: run the agent inside another program.
 *
 *   const bot = await createNanobot();
 *   const turn = bot.chat('What is on my calendar?', { session: 'app:alice' });
 *   for await (const event of turn) if (event.type === 'text') process.stdout.write(event.text);
 *   const { content } = await turn;
 *   await bot.close();
 *
 * It uses the same config, workspace, sessions, tools and slash commands as `nanobot agent`.
 */
import { existsSync } from 'node:fs';
import { type Agent, createAgent } from './app/agent.js';
import { loadConfig } from './config/load.js';
import { syncWorkspaceTemplates } from './config/onboard.js';

export interface NanobotOptions {
  /** Config file; default `~/.nanobot/config.json` (missing = all defaults, keys from the environment). */
  configPath?: string;
  /** Workspace directory; default `agents.defaults.workspace`. Created from the templates when missing. */
  workspace?: string;
  /** Environment for `${VAR}` in the config and provider keys; default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Where runtime warnings go; default nowhere. */
  logger?: NanobotLogger;
}

export interface NanobotLogger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface ChatOptions {
  /** Session key; one conversation per key (default `sdk:default`). */
  session?: string;
  /** Aborts the turn (what was done so far is saved). */
  signal?: AbortSignal;
}

export type ChatEvent =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool-start'; id: string; name: string; arguments: string }
  | { type: 'tool-end'; id: string; name: string; result: string; isError: boolean };

export interface ChatResult {
  /** The final answer. */
  content: string;
  /** `completed`, or why the turn ended early (`max_iterations`, `error`, `aborted`), or `command`. */
  stopReason: string;
  usage: { promptTokens: number; completionTokens: number };
  /** Set when the model provider failed; `content` then explains it for a person. */
  error?: string;
}

/** One turn: iterate it for the stream of events, await it for the final answer (or both). */
export interface ChatTurn extends AsyncIterable<ChatEvent>, PromiseLike<ChatResult> {}

export interface Nanobot {
  /** The model the agent uses (after presets and defaults). */
  readonly model: string;
  chat(message: string, options?: ChatOptions): ChatTurn;
  /** Ends background processes; the instance is unusable afterwards. */
  close(): Promise<void>;
}

export async function createNanobot(options: NanobotOptions = {}): Promise<Nanobot> {
  const env = options.env ?? process.env;
  const loaded = await loadConfig({
    env,
    ...(options.configPath ? { configPath: options.configPath } : {}),
    ...(options.workspace ? { workspace: options.workspace } : {}),
  });
  if (!existsSync(loaded.workspace)) await syncWorkspaceTemplates(loaded.workspace);
  const agent = await createAgent(loaded, { env, ...(options.logger ? { log: options.logger } : {}) });
  return {
    model: agent.model.model,
    chat: (message, chatOptions = {}) => startTurn(agent, message, chatOptions),
    close: () => agent.shutdown(),
  };
}

function startTurn(agent: Agent, message: string, options: ChatOptions): ChatTurn {
  const events: ChatEvent[] = [];
  const waiting = new Set<() => void>();
  let finished = false;
  const wakeAll = () => {
    for (const wake of waiting) wake();
    waiting.clear();
  };
  const emit = (event: ChatEvent) => {
    events.push(event);
    wakeAll();
  };
  const session = options.session ?? 'sdk:default';
  const [channel, ...rest] = session.includes(':') ? session.split(':') : ['sdk', session];
  const result: Promise<ChatResult> = agent.loop
    .processMessage(
      { channel: channel ?? 'sdk', chatId: rest.join(':') || 'default', content: message, sessionKey: session },
      {
        ...(options.signal ? { signal: options.signal } : {}),
        onEvent: (event) => {
          if (event.type === 'text-delta') emit({ type: 'text', text: event.text });
          else if (event.type === 'reasoning-delta') emit({ type: 'reasoning', text: event.text });
          else if (event.type === 'tool-start') {
            const { id, function: fn } = event.call;
            emit({ type: 'tool-start', id, name: fn.name, arguments: fn.arguments });
          } else if (event.type === 'tool-end') {
            const { id, function: fn } = event.call;
            const text = typeof event.result.content === 'string' ? event.result.content : '[text and images]';
            emit({ type: 'tool-end', id, name: fn.name, result: text, isError: event.result.isError === true });
          }
        },
      },
    )
    .then((output) => ({
      content: output.content,
      stopReason: output.stopReason,
      usage: { promptTokens: output.usage.promptTokens, completionTokens: output.usage.completionTokens },
      ...(output.error ? { error: output.error.message } : {}),
    }))
    .finally(() => {
      finished = true;
      wakeAll();
    });
  return {
    // biome-ignore lint/suspicious/noThenProperty: a turn is awaitable by design (PromiseLike).
    then: (onFulfilled, onRejected) => result.then(onFulfilled, onRejected),
    async *[Symbol.asyncIterator]() {
      let next = 0;
      for (;;) {
        while (next < events.length) yield events[next++] as ChatEvent;
        if (finished) return;
        await new Promise<void>((resolve) => waiting.add(resolve));
      }
    },
  };
}
