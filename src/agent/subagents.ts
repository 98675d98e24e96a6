/**
 * Subagents: tasks the model hands off with the `spawn` tool. Each runs as its own AgentRunner over a restricted
 * toolbox, at most `maxConcurrent` at once (the rest wait in order), with its transcript saved as session
 * `subagent:<id>` in the same store, so what it did can be inspected afterwards.
 *
 * A background subagent reports back through `report`, as an inbound message to the session that spawned it — the
 * same path a user message takes, so the parent model sees the result in its next request and answers the user in
 * that chat. Who runs that follow-up turn depends on the surface (see follow-ups.ts). `/stop` cancels a session's
 * subagents, running and queued; a cancelled subagent reports nothing.
 */
import { randomUUID } from 'node:crypto';
import type { InboundMessage } from '../bus/types.js';
import type { ChatMessage } from '../providers/types.js';
import type { Session, SessionStore, SessionWork } from '../session/types.js';
import { ToolRegistry, type ToolRegistryOptions } from '../tools/registry.js';
import type { Spawner, SpawnOrigin, SpawnRequest } from '../tools/spawn.js';
import { fail, ok, type ToolResult } from '../tools/types.js';
import { type Logger, silentLogger } from '../util/log.js';
import { TOOL_CONTRACT } from './prompts.js';
import type { AgentRunner, RunResult } from './runner.js';

/** The subagent toolbox: work on files, search, shell and web. Nothing that talks to a chat or schedules work. */
export const SUBAGENT_TOOLS = [
  'read_file',
  'write_file',
  'edit_file',
  'apply_patch',
  'list_dir',
  'grep',
  'find_files',
  'exec',
  'write_stdin',
  'list_exec_sessions',
  'web_search',
  'web_fetch',
] as const;

/** Subagents running or waiting at once, over all sessions: a looping model cannot pile up work without end. */
const MAX_PENDING = 20;
const MAX_STATUS_LINES = 5;
const SHUTDOWN_WAIT_MS = 2_000;
const NO_ANSWER = 'Task completed but no final response was generated.';

export interface SubagentManagerOptions {
  sessions: SessionStore;
  /** A runner over the subagent toolbox (see subagentToolRegistry); `temperature` overrides the model's. */
  createRunner: (overrides: { temperature?: number }) => AgentRunner;
  systemPrompt: string;
  /** agents.defaults.maxConcurrentSubagents. */
  maxConcurrent: number;
  /** Delivers a background subagent's report to the session that spawned it (see follow-ups.ts). */
  report: (message: InboundMessage) => void | Promise<void>;
  /** The task as the first user message (the loop adds its runtime-context block); defaults to the bare task. */
  taskMessage?: (task: string, origin: SpawnOrigin) => ChatMessage;
  log?: Logger;
  newId?: () => string;
  now?: () => number;
}

type OutcomeStatus = 'ok' | 'error' | 'cancelled';

interface Outcome {
  status: OutcomeStatus;
  text: string;
}

interface Job {
  id: string;
  label: string;
  task: string;
  origin: SpawnOrigin;
  temperature?: number;
  /** Background jobs report through `report`; `wait: true` jobs return their result to the tool call instead. */
  announce: boolean;
  controller: AbortController;
  startedAt?: number;
  settle: (outcome: Outcome) => void;
  done: Promise<Outcome>;
}

export class SubagentManager implements Spawner, SessionWork {
  private readonly queue: Job[] = [];
  private readonly running = new Set<Job>();
  /** Runs and reports still going, so `idle()` and `shutdown()` can wait for them. */
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly log: Logger;
  private readonly now: () => number;
  private closed = false;

  constructor(private readonly options: SubagentManagerOptions) {
    this.log = options.log ?? silentLogger;
    this.now = options.now ?? Date.now;
  }

  async spawn(request: SpawnRequest): Promise<ToolResult> {
    if (this.closed) return fail('subagents are shutting down; do the task yourself or try again later.');
    if (this.queue.length + this.running.size >= MAX_PENDING) {
      return fail(`${MAX_PENDING} subagents are already running or waiting; wait for their results first.`);
    }
    const job = this.createJob(request);
    this.queue.push(job);
    this.pump();
    if (!request.wait) {
      const where = this.running.has(job) ? 'started' : `queued (number ${this.queue.indexOf(job) + 1} in line)`;
      return ok(
        `Subagent [${job.label}] ${where}, id ${job.id}. Its result will arrive in this conversation when it ` +
          'finishes: do not wait for it or check on it.',
      );
    }
    // Cancelled with the spawning turn (its signal aborts on /stop).
    const cancel = () => this.cancel(job);
    request.signal.addEventListener('abort', cancel, { once: true });
    if (request.signal.aborted) cancel();
    const outcome = await job.done.finally(() => request.signal.removeEventListener('abort', cancel));
    return outcome.status === 'ok' ? ok(outcome.text) : fail(outcome.text);
  }

  /** Cancels the session's subagents, running and queued (`/stop`). */
  async stop(sessionKey: string): Promise<string | undefined> {
    const jobs = [...this.running, ...this.queue].filter((job) => job.origin.sessionKey === sessionKey);
    for (const job of jobs) this.cancel(job);
    if (jobs.length === 0) return undefined;
    return `Cancelled ${jobs.length} subagent${jobs.length === 1 ? '' : 's'}.`;
  }

  status(session: Session): string[] {
    const mine = (job: Job) => job.origin.sessionKey === session.key;
    const lines = [
      ...[...this.running].filter(mine).map((job) => {
        const seconds = Math.round((this.now() - (job.startedAt ?? this.now())) / 1000);
        return `Subagent ${job.label} (${job.id}): running for ${seconds} s`;
      }),
      ...this.queue.filter(mine).map((job) => `Subagent ${job.label} (${job.id}): queued`),
    ];
    if (lines.length <= MAX_STATUS_LINES) return lines;
    return [...lines.slice(0, MAX_STATUS_LINES), `…and ${lines.length - MAX_STATUS_LINES} more subagents`];
  }

  /** Resolves once no subagent is running or waiting and every report has been handed over. */
  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /** Cancels everything and refuses new work; waits briefly so cancelled runs can save their transcripts. */
  async shutdown(): Promise<void> {
    this.closed = true;
    for (const job of [...this.running, ...this.queue]) this.cancel(job);
    const timeout = new Promise((resolve) => setTimeout(resolve, SHUTDOWN_WAIT_MS).unref());
    await Promise.race([Promise.allSettled([...this.inflight]), timeout]);
  }

  private createJob(request: SpawnRequest): Job {
    let settle!: (outcome: Outcome) => void;
    const done = new Promise<Outcome>((resolve) => {
      settle = resolve;
    });
    const task = request.task.trim();
    return {
      id: this.options.newId?.() ?? randomUUID().slice(0, 8),
      label: request.label?.trim() || (task.length > 30 ? `${task.slice(0, 30)}…` : task),
      task,
      origin: request.origin,
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      announce: !request.wait,
      controller: new AbortController(),
      settle,
      done,
    };
  }

  private cancel(job: Job): void {
    const waiting = this.queue.indexOf(job);
    if (waiting !== -1) {
      this.queue.splice(waiting, 1);
      job.settle({ status: 'cancelled', text: 'Cancelled before it started.' });
      return;
    }
    job.controller.abort(new Error('subagent cancelled'));
  }

  /** Starts waiting jobs, in order, while there are free slots. */
  private pump(): void {
    while (this.running.size < Math.max(1, this.options.maxConcurrent)) {
      const job = this.queue.shift();
      if (!job) return;
      job.startedAt = this.now();
      this.running.add(job);
      this.track(this.execute(job).then((outcome) => this.finish(job, outcome)));
    }
  }

  private async finish(job: Job, outcome: Outcome): Promise<void> {
    this.running.delete(job);
    this.pump();
    job.settle(outcome);
    this.log.info(`subagent ${job.id} [${job.label}]: ${outcome.status}`);
    if (!job.announce || outcome.status === 'cancelled') return;
    const { origin } = job;
    try {
      await this.options.report({
        channel: origin.channel,
        senderId: 'subagent',
        chatId: origin.chatId,
        sessionKey: origin.sessionKey,
        content: subagentReport(job.label, job.task, outcome),
        metadata: { injected_event: 'subagent_result', subagent_task_id: job.id },
      });
    } catch (err) {
      this.log.warn(`subagent ${job.id}: its report to ${origin.sessionKey} failed: ${(err as Error).message}`);
    }
  }

  /** Runs the job's task and saves every step in session `subagent:<id>`. Never throws. */
  private async execute(job: Job): Promise<Outcome> {
    const { sessions } = this.options;
    const signal = job.controller.signal;
    let session: Session | undefined;
    const record = (status: string) => {
      if (!session) return;
      session.metadata.subagent = {
        id: job.id,
        label: job.label,
        task: job.task,
        parent_session: job.origin.sessionKey,
        status,
        started_at: new Date(job.startedAt ?? this.now()).toISOString(),
        ...(status === 'running' ? {} : { ended_at: new Date(this.now()).toISOString() }),
      };
    };
    let outcome: Outcome;
    try {
      session = await sessions.load(`subagent:${job.id}`);
      const user = this.options.taskMessage?.(job.task, job.origin) ?? { role: 'user', content: job.task };
      session.messages.push(stamped(user));
      record('running');
      await sessions.save(session);
      const current = session;
      let saved = 0;
      const result = await this.options
        .createRunner(job.temperature !== undefined ? { temperature: job.temperature } : {})
        .run([{ role: 'system', content: this.options.systemPrompt }, user], {
          signal,
          toolContext: { sessionKey: current.key, channel: job.origin.channel, chatId: job.origin.chatId },
          onProgress: async (messages) => {
            current.messages.push(...messages.map(stamped));
            saved += messages.length;
            await sessions.save(current);
          },
        });
      current.messages.push(...result.messages.slice(saved).map(stamped));
      outcome = outcomeOf(result, signal.aborted);
    } catch (err) {
      outcome = signal.aborted
        ? { status: 'cancelled', text: 'Cancelled.' }
        : { status: 'error', text: `Error: ${(err as Error).message}` };
    }
    record(outcome.status === 'ok' ? 'done' : outcome.status);
    if (session)
      await sessions.save(session).catch((err: Error) => this.log.warn(`subagent ${job.id}: ${err.message}`));
    return outcome;
  }

  private track(work: Promise<unknown>): void {
    const tracked = work.finally(() => this.inflight.delete(tracked));
    this.inflight.add(tracked);
  }
}

/** The subagent's tool registry: the parent's tools from SUBAGENT_TOOLS that exist (the config may disable some). */
export function subagentToolRegistry(parent: ToolRegistry, options: ToolRegistryOptions = {}): ToolRegistry {
  const registry = new ToolRegistry(options);
  for (const name of SUBAGENT_TOOLS) {
    const tool = parent.get(name);
    if (tool) registry.register(tool);
  }
  return registry;
}

export function subagentSystemPrompt(workspace: string): string {
  return `# Subagent

You are a subagent: the main agent gave you one task to do on your own, in the background. Stay on that task.
Nobody reads your messages while you work and you cannot ask questions; your final answer is reported back to the
main agent, so make it a complete, self-contained report of what you did and what you found.

## Workspace
Your workspace is ${workspace}. Relative paths in tools resolve there.

${TOOL_CONTRACT}`;
}

/** The follow-up message the parent session receives when a background subagent ends. */
export function subagentReport(label: string, task: string, outcome: { status: OutcomeStatus; text: string }): string {
  const how = outcome.status === 'ok' ? 'completed' : 'failed';
  return (
    `[Subagent '${label}' ${how}]\n\nTask: ${task}\n\nResult:\n${outcome.text}\n\n` +
    'This is the result of background work you started, not a message from the user. Tell the user what came of ' +
    'it in a sentence or two, in your own words, without mentioning subagents or task ids.'
  );
}

function outcomeOf(result: RunResult, cancelled: boolean): Outcome {
  if (cancelled || result.stopReason === 'aborted') return { status: 'cancelled', text: 'Cancelled.' };
  if (result.stopReason === 'error') {
    return { status: 'error', text: `Error: ${result.error?.message ?? 'the model request failed.'}` };
  }
  return { status: 'ok', text: result.content || NO_ANSWER };
}

/** A copy with the time it was recorded (the runner keeps sending the original, which must stay clean). */
function stamped(message: ChatMessage): ChatMessage {
  return { ...message, timestamp: message.timestamp ?? new Date().toISOString() };
}
