/**
 * Runs `nanobot agent -m` child processes in one throwaway HOME against the fake LLM (behind a proxy that streams
 * slowly), arms a SIGKILL at a chosen point of the turn's timeline and records what the child was doing when it
 * died: the last stream event, the session writes seen, whether a save was cut short.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { type FSWatcher, readdirSync, watch } from 'node:fs';
import { join } from 'node:path';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type SlowStreamEvent, type SlowStreamProxy, startSlowStreamProxy } from '../helpers/crash-slow-stream.js';
import { type FakeLLM, type FakeReply, type FakeRequest, startFakeLLM } from '../helpers/fake-llm.js';
import { userTextOf } from './session-invariants.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');
const SESSION_FILE_NAME = `${Buffer.from('cli:direct', 'utf8').toString('base64url')}.jsonl`;
/** Pause between two SSE events of a reply: a model reply takes 30–80 ms to arrive. */
const EVENT_GAP_MS = 5;

/** The unique message of kill turn `n`, and the follow-up sent after it. */
export const crashTurnText = (n: number) => `crash turn ${n}: write a file, run a command, read the file back`;
export const checkText = (n: number) => `check ${n}`;
export const checkAnswer = (n: number) => `checked ${n}, all good`;
export const finalAnswer = (n: number) => `Turn ${n} finished: wrote the file, ran the command, read it back.`;

/**
 * The fake model's side of a crash turn, decided from the request itself so a killed turn leaves nothing queued:
 * round 1 streams text then calls write_file and exec (`sleep 0.2`), round 2 calls read_file, round 3 answers.
 * A follow-up `check N` gets a plain answer.
 */
export function scriptedReply(body: Record<string, unknown>): FakeReply {
  const messages = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
  const lastUser = messages.findLastIndex((message) => message.role === 'user');
  const text = userTextOf(messages[lastUser]?.content);
  const check = /^check (\d+)$/.exec(text);
  if (check) return { text: checkAnswer(Number(check[1])) };
  const crash = /^crash turn (\d+):/.exec(text);
  if (!crash) return { text: `(crash test: unexpected request for "${text.slice(0, 60)}")` };
  const n = Number(crash[1]);
  const file = `crash/file-${n}.txt`;
  const rounds = messages.slice(lastUser + 1).filter((message) => message.role === 'assistant').length;
  if (rounds === 0) {
    return {
      text: `Working on turn ${n}: first I write the file, then I run the command.`,
      toolCalls: [
        { name: 'write_file', arguments: { path: file, content: `content of turn ${n}\n` } },
        { name: 'exec', arguments: { command: `sleep 0.2; echo done-${n}` } },
      ],
    };
  }
  if (rounds === 1) return { toolCalls: [{ name: 'read_file', arguments: { path: file } }] };
  return { text: finalAnswer(n) };
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface TimelineEntry {
  ms: number;
  what: string;
}

/** One child `nanobot agent -m …` and everything observed while it ran. */
export interface AgentRun {
  child: ChildProcess;
  startedAt: number;
  /** Proxy request number before this run: its first model request is `firstRequest + 1`. */
  firstRequest: number;
  /** Index into `fake.requests` where this run's requests start. */
  firstFakeRequest: number;
  stdout: string;
  stderr: string;
  /** Milliseconds from spawn to the first byte on stdout (the answer), if any. */
  answerMs?: number;
  timeline: TimelineEntry[];
  /** Session directory changes (fs.watch events) seen during this run. */
  sessionWrites: number;
  exited: Promise<ExitInfo>;
  kill(reason: string): void;
  killedAt?: number;
  killReason?: string;
}

export class CrashHarness {
  private watcher: FSWatcher | undefined;
  private currentRun: AgentRun | undefined;
  sessionDir = '';

  private constructor(
    readonly home: string,
    readonly fake: FakeLLM,
    readonly proxy: SlowStreamProxy,
  ) {
    proxy.listener = (event) => this.onStreamEvent(event);
  }

  static async start(): Promise<CrashHarness> {
    const home = tempHome();
    const onboard = await runCli(['onboard'], home);
    if (onboard.code !== 0) throw new Error(`nanobot onboard failed: ${onboard.stderr}`);
    const fake = await startFakeLLM();
    const proxy = await startSlowStreamProxy(fake.url, { eventGapMs: EVENT_GAP_MS });
    editConfig(home, (config) => {
      config.agents.defaults.provider = 'custom';
      config.agents.defaults.model = 'test-model';
      config.providers.custom = { apiKey: 'test-key', apiBase: `${proxy.url}/v1` };
    });
    return new CrashHarness(home, fake, proxy);
  }

  get sessionFile(): string {
    return join(this.sessionDir, SESSION_FILE_NAME);
  }

  /** Called once the first turn has created `<HOME>/.nanobot/sessions/<workspace-id>/`. */
  watchSessionDir(): void {
    const root = join(this.home, '.nanobot', 'sessions');
    const [workspaceId] = readdirSync(root);
    if (!workspaceId) throw new Error(`no session directory under ${root}`);
    this.sessionDir = join(root, workspaceId);
    this.watcher = watch(this.sessionDir, (_event, name) => {
      const run = this.currentRun;
      if (!run || run.killedAt !== undefined) return;
      run.sessionWrites++;
      run.timeline.push({ ms: elapsed(run), what: `session dir change #${run.sessionWrites} (${name ?? '?'})` });
      this.onSessionWrite?.(run);
    });
  }

  /** Temp files of interrupted atomic writes in the session directory. */
  leftoverTempFiles(): string[] {
    return this.sessionDir ? readdirSync(this.sessionDir).filter((name) => name.endsWith('.tmp')) : [];
  }

  /** Set by a kill point that fires on session writes. */
  onSessionWrite: ((run: AgentRun) => void) | undefined;
  /** Set by a kill point that fires on stream events. */
  onStream: ((run: AgentRun, event: SlowStreamEvent) => void) | undefined;

  /** Model requests this run sent (from the fake's log). */
  requestsOf(run: AgentRun): FakeRequest[] {
    return this.fake.requests.slice(run.firstFakeRequest).filter((request) => request.method === 'POST');
  }

  runAgent(message: string): AgentRun {
    const child = spawn(process.execPath, [BIN, 'agent', '-m', message], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: this.home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const run: AgentRun = {
      child,
      startedAt: performance.now(),
      firstRequest: this.proxy.requestCount,
      firstFakeRequest: this.fake.requests.length,
      stdout: '',
      stderr: '',
      timeline: [],
      sessionWrites: 0,
      exited: new Promise<ExitInfo>((resolve, reject) => {
        child.on('error', reject);
        child.on('close', (code, signal) => {
          if (this.currentRun === run) this.currentRun = undefined;
          resolve({ code, signal });
        });
      }),
      kill: (reason) => {
        if (run.killedAt !== undefined || child.exitCode !== null || child.signalCode !== null) return;
        run.killedAt = elapsed(run);
        run.killReason = reason;
        child.kill('SIGKILL');
      },
    };
    child.stdout?.on('data', (data: Buffer) => {
      run.answerMs ??= elapsed(run);
      run.stdout += data.toString();
    });
    child.stderr?.on('data', (data: Buffer) => {
      run.stderr += data.toString();
    });
    this.currentRun = run;
    return run;
  }

  /** Where the child was in its turn when it was killed, from the stream events and session writes seen. */
  phaseAtKill(run: AgentRun): string {
    const at = run.killedAt ?? Number.POSITIVE_INFINITY;
    const before = run.timeline.filter((entry) => entry.ms <= at);
    const lastStream = before.findLast((entry) => entry.what.startsWith('request'));
    const writes = before.filter((entry) => entry.what.startsWith('session dir change')).length;
    const where = lastStream ? lastStream.what : 'before the first model request';
    return `${where}; ${writes} session dir change(s) seen`;
  }

  async close(): Promise<void> {
    this.watcher?.close();
    await this.proxy.close();
    await this.fake.close();
  }

  private onStreamEvent(event: SlowStreamEvent): void {
    if (event.type === 'request-start') this.fake.enqueue(scriptedReply);
    const run = this.currentRun;
    if (!run || run.killedAt !== undefined) return;
    const request = event.request - run.firstRequest;
    const what =
      event.type === 'request-start'
        ? `request ${request} started`
        : event.type === 'event-sent'
          ? `request ${request} streaming: event ${event.index + 1}/${event.count} sent`
          : `request ${request} reply ${event.complete ? 'complete' : 'cut off'}`;
    run.timeline.push({ ms: elapsed(run), what });
    this.onStream?.(run, event);
  }
}

function elapsed(run: AgentRun): number {
  return Math.round(performance.now() - run.startedAt);
}
