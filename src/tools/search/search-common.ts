/** Pieces shared by grep and find_files: root resolution, display paths, filters, paging, time slicing. */
import fs from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import { BoundedRegex, RegexBudget } from '../../security/bounded-regex.js';
import { policyCheck, type RealPathCheck } from '../../security/checked-open.js';
import { isPathInside, type PathPolicy, realpathNearest } from '../../security/workspace.js';

export interface SearchRoot {
  /** Real absolute path of the file or directory to search. */
  root: string;
  isFile: boolean;
  realWorkspace: string;
  /**
   * Display path for a path relative to the search directory (for a file root: relative to its parent):
   * workspace-relative when inside the workspace, absolute otherwise. Computed once, not per file.
   */
  display: (relative: string) => string;
  /**
   * Decides on what the walk actually opened: it must be `root` itself (the path checked here), still allowed by
   * the policy. A root swapped for a link or another directory in between is refused, not searched.
   */
  check: RealPathCheck;
}

/** Resolves the `path` argument for reading; a string is an error for the model. */
export async function resolveSearchRoot(policy: PathPolicy, input: string | undefined): Promise<SearchRoot | string> {
  const requested = input?.trim() ? input : '.';
  const resolved = policy.resolve(requested, 'read');
  if (!resolved.ok) return resolved.error;
  const stat = await fs.stat(resolved.path).catch(() => undefined);
  if (!stat) return `Error: path not found: ${requested}`;
  if (!stat.isFile() && !stat.isDirectory()) return `Error: ${requested} is neither a file nor a directory.`;
  const realWorkspace = realpathNearest(policy.workspace);
  const root = resolved.path;
  const dir = stat.isFile() ? path.dirname(root) : root;
  const allowed = policyCheck(policy, 'read');
  const check: RealPathCheck = (real) => {
    const verdict = allowed(real);
    if (verdict !== true) return verdict;
    return real === root ? true : `Error: ${requested} changed while it was being searched; search again.`;
  };
  return { root, isFile: stat.isFile(), realWorkspace, display: displayUnder(dir, realWorkspace), check };
}

/** The model's message for a failed search; a refusal of the root carries the policy's own verdict. */
export function searchFailure(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return `search failed: ${text.replace(/^refusing [^:]*: Error: /, '')}`;
}

function displayUnder(dir: string, realWorkspace: string): (relative: string) => string {
  if (!isPathInside(dir, realWorkspace)) return (relative) => (relative === '' ? dir : `${dir}/${relative}`);
  const base = path.relative(realWorkspace, dir).split(path.sep).join('/');
  if (base === '') return (relative) => relative || '.';
  return (relative) => (relative === '' ? base : `${base}/${relative}`);
}

/**
 * A glob filter. Patterns without `/` match the file name (`*.ts`); patterns with one match the path
 * relative to the search root or to the workspace, whichever the model had in mind.
 */
export function globMatcher(
  glob: string | undefined,
  budget: RegexBudget = new RegexBudget(),
): ((name: string, ...paths: string[]) => boolean) | undefined {
  const pattern = glob?.trim().replace(/\\/g, '/');
  if (!pattern) return undefined;
  // The glob is the model's and becomes a backtracking regex: `*a*a*a*a*a*b` is polynomial of degree 6 in the
  // name's length. Up to two wildcards is at most quadratic in a path, so it runs here; more go through the budget.
  const regex = picomatch.makeRe(pattern, { dot: true });
  const wildcards = pattern.match(/\*+|\?|[@!+*?]\(/g)?.length ?? 0;
  const bounded = new BoundedRegex(regex.source, regex.flags, budget, {
    subject: `the glob ${JSON.stringify(pattern)}`,
    local: wildcards <= 2,
  });
  const isMatch = (candidate: string) => candidate === pattern || bounded.test(candidate);
  if (!pattern.includes('/')) return (name) => isMatch(name);
  return (_name, ...paths) => paths.some((candidate) => isMatch(candidate));
}

/** Lower-case terms that must all occur; a term with `/` is looked for in the path, others in the name. */
export function queryMatcher(query: string | undefined): ((name: string, relative: string) => boolean) | undefined {
  const terms = (query ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  if (terms.length === 0) return undefined;
  return (name, relative) => {
    const lowerName = name.toLowerCase();
    const lowerPath = relative.toLowerCase();
    return terms.every((term) => (term.includes('/') ? lowerPath : lowerName).includes(term));
  };
}

/** `(… more: use offset=N)` style footer; empty when everything was shown from the start. */
export function pagingNote(offset: number, shown: number, hasMore: boolean, unit: string): string {
  if (hasMore) {
    return `\n\n(Showing ${unit} ${offset + 1}–${offset + shown}; more exist. Use offset=${offset + shown} for the next page, or narrow the search.)`;
  }
  if (offset > 0) return `\n\n(Showing ${unit} ${offset + 1}–${offset + shown}; no more.)`;
  return '';
}

/**
 * Lets a long synchronous loop share the event loop: `tick()` yields (setImmediate) once the current
 * slice has run for `sliceMs`, and throws once the signal is aborted.
 *
 * Why synchronous at all: on Node 20 each async fs call is a thread-pool round trip, and reading 50k
 * small files with fs.promises (32 in flight) took ~4.7 s against ~0.4 s with the sync calls. Slicing
 * keeps the agent responsive (other tools, timers, aborts) while getting the sync throughput.
 */
export class TimeSlicer {
  private sliceStart = performance.now();

  constructor(
    private readonly signal?: AbortSignal,
    private readonly sliceMs = 12,
  ) {}

  async tick(): Promise<void> {
    if (this.signal?.aborted) throw new Error('search aborted');
    if (performance.now() - this.sliceStart < this.sliceMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.signal?.aborted) throw new Error('search aborted');
    this.sliceStart = performance.now();
  }
}
