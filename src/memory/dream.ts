/**
 * Dream: a background agent that folds new history entries into the long-term memory files, with guards learned
 * the hard way: restricted writes, no shrinking a memory file by more than half without confirmation, iteration and
 * token caps, the cursor moving only after a successful run, and every change committed to the memory git repo.
 */

import type { ChatMessage, LLMProvider } from '../providers/types.js';
import { WorkspaceFs } from '../security/workspace-fs.js';
import type { ToolRegistry } from '../tools/registry.js';
import { TokenBudgetProvider } from './dream-budget.js';
import type { HistoryEntry, HistorySource } from './dream-history.js';
import { buildDreamInput, loadDreamPrompt } from './dream-prompt.js';
import { createDreamToolRegistry } from './dream-tools.js';
import { DREAM_CURSOR_PATH, type FileChange, MEMORY_FILES, MemoryGit, summariseChanges } from './git.js';

export const DREAM_DEFAULTS = { maxEntries: 20, maxIterations: 15, maxTotalTokens: 200_000 } as const;
const MAX_SAMPLE_LINES = 5;
const MAX_SAMPLE_CHARS = 100;

/** How a runner run ends (AgentRunner's StopReason: the wiring's `new AgentRunner(spec)` fails to compile if they drift). */
export type DreamRunStop = 'completed' | 'max_iterations' | 'error' | 'aborted';

/** What Dream needs of an agent runner: one tool-using model loop, run to its end. */
export interface DreamRunner {
  run(
    messages: ChatMessage[],
    options: { signal?: AbortSignal; toolContext: { sessionKey: string } },
  ): Promise<{ stopReason: DreamRunStop; content: string; error?: { message: string } }>;
}

/**
 * Makes the runner for one Dream run. The wiring passes `(spec) => new AgentRunner(spec)`: memory/ sits below
 * agent/ and must not import the runner itself.
 */
export type DreamRunnerFactory = (spec: {
  provider: LLMProvider;
  model: string;
  maxTokens: number;
  tools: ToolRegistry;
  maxIterations: number;
}) => DreamRunner;

export interface DreamOptions {
  runner: DreamRunnerFactory;
  workspace: string;
  history: HistorySource;
  /** Defaults to the repository at `<workspace>/.git`. */
  git?: MemoryGit;
  maxEntries?: number;
  maxIterations?: number;
  /** Prompt + completion tokens summed over all requests; the run stops once it is spent. */
  maxTotalTokens?: number;
  now?: () => Date;
}

export interface DreamRunOptions {
  provider: LLMProvider;
  model: string;
  maxTokens: number;
  signal?: AbortSignal;
}

export type DreamStopReason = DreamRunStop | 'token_cap' | 'nothing_to_do' | 'busy';

export interface DreamReport {
  stopReason: DreamStopReason;
  /** History entries given to the model. */
  entriesProcessed: number;
  cursorBefore: number;
  /** Equal to cursorBefore unless the run completed. */
  cursorAfter: number;
  /** Memory files the run changed (the cursor file is not listed). */
  filesChanged: string[];
  /** The commit holding the changes, when something was committed. */
  sha: string | undefined;
  tokensUsed: number;
  /** The model's closing summary, or the error. */
  summary: string;
}

/** A memory file larger than this is not put into Dream's input. */
const MAX_MEMORY_FILE_BYTES = 1024 * 1024;

export class Dream {
  readonly git: MemoryGit;
  private running = false;
  /** Memory files and skills are read through the workspace-file layer: a link out reads as missing. */
  private readonly wfs: WorkspaceFs;

  constructor(private readonly options: DreamOptions) {
    this.git = options.git ?? new MemoryGit(options.workspace);
    this.wfs = new WorkspaceFs(options.workspace);
  }

  async run(run: DreamRunOptions): Promise<DreamReport> {
    // A scheduled run and /dream must not process the same entries twice.
    if (this.running) return emptyReport('busy', 0, 'Dream is already running.');
    this.running = true;
    try {
      return await this.runExclusive(run);
    } finally {
      this.running = false;
    }
  }

  private async runExclusive(run: DreamRunOptions): Promise<DreamReport> {
    const { history, workspace } = this.options;
    const cursorBefore = await history.readDreamCursor();
    const entries = await history.entriesAfter(cursorBefore, this.options.maxEntries ?? DREAM_DEFAULTS.maxEntries);
    if (entries.length === 0) return emptyReport('nothing_to_do', cursorBefore, 'No new history since the last Dream.');

    await this.git.init();
    // Edits the agent or the user made since the last commit get their own commit, so Dream's commit (and a later
    // /dream-restore of it) covers only what Dream did.
    await this.git.commitChanges('memory: edits made outside Dream');

    const budget = new TokenBudgetProvider(run.provider, this.options.maxTotalTokens ?? DREAM_DEFAULTS.maxTotalTokens);
    const runner = this.options.runner({
      provider: budget,
      model: run.model,
      maxTokens: run.maxTokens,
      tools: createDreamToolRegistry(workspace),
      maxIterations: this.options.maxIterations ?? DREAM_DEFAULTS.maxIterations,
    });
    const now = this.options.now?.() ?? new Date();
    const messages: ChatMessage[] = [
      { role: 'system', content: await loadDreamPrompt(workspace) },
      {
        role: 'user',
        content: buildDreamInput({
          files: await this.readMemoryFiles(),
          skills: await this.listSkills(),
          entries,
          now,
        }),
      },
    ];
    const result = await runner.run(messages, {
      ...(run.signal ? { signal: run.signal } : {}),
      toolContext: { sessionKey: `dream:${now.getTime()}` },
    });
    const stopReason: DreamStopReason =
      result.stopReason === 'error' && budget.exhausted ? 'token_cap' : result.stopReason;

    // Only a completed run has seen every entry through; otherwise the next run gets the same entries again.
    const lastEntry = entries.at(-1) as HistoryEntry;
    const cursorAfter = stopReason === 'completed' ? lastEntry.cursor : cursorBefore;
    if (cursorAfter !== cursorBefore) await history.writeDreamCursor(cursorAfter);

    // Changes of an incomplete run are committed too: they are on disk either way, and a commit makes them undoable.
    const changes = await this.git.pendingChanges();
    const memoryChanges = changes.filter((change) => change.path !== DREAM_CURSOR_PATH);
    const sha = await this.git.commitChanges(
      dreamCommitMessage(memoryChanges, { first: entries[0]?.cursor ?? 0, last: lastEntry.cursor, stopReason }),
    );
    return {
      stopReason,
      entriesProcessed: entries.length,
      cursorBefore,
      cursorAfter,
      filesChanged: memoryChanges.map((change) => change.path),
      sha,
      tokensUsed: budget.tokensUsed,
      summary: result.error ? result.error.message : result.content,
    };
  }

  private async readMemoryFiles(): Promise<Array<{ path: string; content: string | undefined }>> {
    return Promise.all(
      MEMORY_FILES.map(async (file) => ({
        path: file,
        content: await this.wfs.readText(file, { maxBytes: MAX_MEMORY_FILE_BYTES }).catch(() => undefined),
      })),
    );
  }

  private async listSkills(): Promise<string[]> {
    const entries = await this.wfs.readdir('skills').catch(() => []);
    return entries.filter((entry) => entry.kind === 'directory').map((entry) => `skills/${entry.name}/SKILL.md`);
  }
}

/** `dream: MEMORY.md +3 -1, USER.md +1` and the first changed lines, from the real diff. */
export function dreamCommitMessage(
  changes: FileChange[],
  run: { first: number; last: number; stopReason: DreamStopReason },
): string {
  const { stats, samples } = summariseChanges(changes);
  const incomplete = run.stopReason === 'completed' ? '' : ` (incomplete: ${run.stopReason})`;
  const headline = `dream: ${stats.length > 0 ? stats.join(', ') : 'no memory changes'}${incomplete}`;
  const body = samples
    .slice(0, MAX_SAMPLE_LINES)
    .map((line) => (line.length > MAX_SAMPLE_CHARS ? `${line.slice(0, MAX_SAMPLE_CHARS - 1)}…` : line));
  return [headline, '', ...body, ...(body.length > 0 ? [''] : []), `History entries ${run.first}–${run.last}.`].join(
    '\n',
  );
}

function emptyReport(stopReason: DreamStopReason, cursor: number, summary: string): DreamReport {
  return {
    stopReason,
    entriesProcessed: 0,
    cursorBefore: cursor,
    cursorAfter: cursor,
    filesChanged: [],
    sha: undefined,
    tokensUsed: 0,
    summary,
  };
}

export function formatDreamReport(report: DreamReport): string {
  if (report.stopReason === 'nothing_to_do' || report.stopReason === 'busy') return report.summary;
  const files = report.filesChanged.length > 0 ? report.filesChanged.join(', ') : 'no files';
  const commit = report.sha ? ` Commit ${report.sha.slice(0, 8)} (/dream-log ${report.sha.slice(0, 8)}).` : '';
  const head =
    report.stopReason === 'completed'
      ? `Dream processed ${report.entriesProcessed} history entries and changed ${files}.`
      : `Dream stopped early (${report.stopReason}) after ${report.entriesProcessed} entries were given to it; ` +
        `changed ${files}. The history cursor did not move, so the next Dream retries these entries.`;
  const summary = report.summary ? `\n${report.summary}` : '';
  return `${head}${commit} Tokens used: ${report.tokensUsed}.${summary}`;
}
