/**
 * The heartbeat: every `gateway.heartbeat.intervalS`, if HEARTBEAT.md lists active tasks, one agent turn works on
 * them in the `heartbeat` session; an evaluator then decides whether the result is worth a message to the user.
 * No tasks → no LLM call. The evaluator fails closed, and "nothing to report" is never sent.
 */

import type { LLMProvider } from '../providers/types.js';
import { errorMessage } from '../util/errors.js';
import { type Logger, logFailure, silentLogger } from '../util/log.js';
import { EVALUATE_NOTIFICATION_TOOL, evaluatorPrompt } from './evaluator-prompt.js';
import { readActiveTasks } from './tasks.js';

export const HEARTBEAT_SESSION = 'heartbeat';

export interface HeartbeatOptions {
  workspace: string;
  intervalS: number;
  /** Runs an agent turn in the heartbeat session and returns its answer. */
  runTurn: (prompt: string) => Promise<string>;
  /** Asks the model whether `result` deserves a notification; the default uses `evaluator` below. */
  evaluate: (result: string, tasks: string[]) => Promise<boolean>;
  /** Delivers a notification to the user's last active chat. */
  notify: (text: string) => Promise<void>;
  log?: Logger;
  now?: () => Date;
}

export interface HeartbeatReport {
  ran: boolean;
  notified: boolean;
  tasks: number;
}

export class HeartbeatService {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<HeartbeatReport> | undefined;
  private readonly log: Logger;

  constructor(private readonly options: HeartbeatOptions) {
    this.log = options.log ?? silentLogger;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(
      () => void this.tick().catch(logFailure(this.log, 'heartbeat failed')),
      this.options.intervalS * 1000,
    );
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** One heartbeat; overlapping ticks share the run in progress. */
  tick(): Promise<HeartbeatReport> {
    this.running ??= this.beat().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async beat(): Promise<HeartbeatReport> {
    let tasks: string[];
    try {
      tasks = readActiveTasks(this.options.workspace);
    } catch (error) {
      this.log.warn(`heartbeat: ${error instanceof Error ? error.message : String(error)}; skipping this beat`);
      return { ran: false, notified: false, tasks: 0 };
    }
    if (tasks.length === 0) return { ran: false, notified: false, tasks: 0 };
    const now = (this.options.now?.() ?? new Date()).toISOString();
    const prompt =
      `[Heartbeat ${now}] Work on these tasks from HEARTBEAT.md:\n${tasks.map((t) => `- ${t}`).join('\n')}\n\n` +
      'Report only what the user should know now. If there is nothing new, answer exactly: nothing to report.';
    try {
      const result = (await this.options.runTurn(prompt)).trim();
      if (!result || /^nothing to report\.?$/i.test(result)) return { ran: true, notified: false, tasks: tasks.length };
      const worth = await this.options.evaluate(result, tasks).catch((err: unknown) => {
        this.log.warn(`heartbeat: could not decide whether to notify (${errorMessage(err)}); not notifying`);
        return false;
      });
      if (worth) await this.options.notify(result);
      return { ran: true, notified: worth, tasks: tasks.length };
    } catch (err) {
      this.log.warn(`heartbeat failed: ${errorMessage(err)}`);
      return { ran: true, notified: false, tasks: tasks.length };
    }
  }
}

/**
 * The notification gate: the model answers through the `evaluate_notification` tool, under the workspace's
 * `prompts/evaluator.md` when it has one. No tool call, an error or anything unclear means "don't notify".
 */
export function modelEvaluator(
  provider: LLMProvider,
  model: string,
  workspace: string,
): (result: string, tasks: string[]) => Promise<boolean> {
  return async (result, tasks) => {
    const stream = provider.stream({
      model,
      maxTokens: 1024,
      temperature: 0,
      tools: [EVALUATE_NOTIFICATION_TOOL],
      messages: [
        { role: 'system', content: await evaluatorPrompt(workspace) },
        {
          role: 'user',
          content: `Tasks that were checked:\n${tasks.join('\n')}\n\nTheir result:\n${result}\n\nShould the user be notified?`,
        },
      ],
    });
    const response = await stream.result();
    if (response.finishReason === 'error') return false;
    const call = response.toolCalls?.find((c) => c.function.name === EVALUATE_NOTIFICATION_TOOL.function.name);
    if (!call) return false;
    try {
      const args: unknown = JSON.parse(call.function.arguments || '{}');
      return typeof args === 'object' && args !== null && (args as { should_notify?: unknown }).should_notify === true;
    } catch {
      return false;
    }
  };
}
