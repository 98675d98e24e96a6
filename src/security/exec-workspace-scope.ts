/**
 * The exec guard's workspace restriction (restrictToWorkspace): every path-like word of a simple command, and every
 * redirection target, must resolve (through symlinks) inside the workspace or the working directory.
 */
import path from 'node:path';
import { programIndex, type SimpleCommand } from './exec-deny-rules.js';
import { blocked, type CommandCheck, HARD_BOUNDARY } from './exec-verdict.js';
import type { ShellWord } from './shell-parse.js';
import { expandHome, isPathInside, realpathNearest } from './workspace.js';

/** What the scope check needs from the guard's context. */
export interface ScopeContext {
  options: { workspace: string };
  /** Real paths of the workspace and the working directory. */
  allowRoots: string[];
  homeDir: string;
  env: Record<string, string | undefined>;
}

/** Device files that are safe to name in any command. */
const SAFE_DEVICES = new Set(['/dev/null', '/dev/zero', '/dev/stdin', '/dev/stdout', '/dev/stderr', '/dev/tty']);
const SAFE_DEVICE_PATTERN = /^\/dev\/(?:u?random|fd\/\d+)$/;
/** Read-only system directories whose programs may be run by absolute path (`/usr/bin/python3`, `/bin/sh`). */
const SYSTEM_BIN_DIRS = [
  '/bin',
  '/sbin',
  '/usr/bin',
  '/usr/sbin',
  '/usr/local/bin',
  '/usr/local/sbin',
  '/opt/homebrew/bin',
  '/usr/libexec',
];
/** Characters that make a quoted word look like code or a pattern rather than a file name. */
const CODE_LIKE = /[\n{}()[\]*?|^;<>,'"]/;

export function checkWorkspaceScope(
  command: SimpleCommand,
  words: ShellWord[],
  raw: string,
  context: ScopeContext,
): CommandCheck {
  const start = programIndex(command.words);
  const program = command.words[start];
  const outside = (what: string) =>
    blocked(`${what} is outside the workspace ${context.allowRoots[0]}`, raw, `. ${HARD_BOUNDARY}`);

  if (
    (program === 'cd' || program === 'pushd') &&
    (command.words.length === start + 1 || command.words[start + 1] === '-')
  ) {
    return outside('`cd` without a directory goes to the home directory, which');
  }

  // Wrappers before the program (`/usr/bin/env`, `sudo`) are programs too; assignments are not.
  const candidates: { word: ShellWord; isProgram: boolean }[] = words.map((word, i) => ({
    word,
    isProgram: i === start || (i < start && !/^[A-Za-z_]\w*=/.test(word.value)),
  }));
  for (const { op, target } of command.redirects) {
    if (op === '<<' || op === '<<-' || op === '<<<') continue;
    if ((op === '>&' || op === '<&') && /^(?:\d+|-)$/.test(target.value)) continue;
    candidates.push({ word: target, isProgram: false });
  }

  for (const { word, isProgram } of candidates) {
    if (hasParentTraversal(word.value)) return blocked('path traversal (..)', raw, `. ${HARD_BOUNDARY}`);
    for (const candidate of pathCandidates(word, isProgram)) {
      const problem = checkPathCandidate(candidate, isProgram, context);
      if (problem) return outside(problem);
    }
  }
  return { ok: true };
}

function hasParentTraversal(value: string): boolean {
  return value.split(/[/\\=:\s,]+/).includes('..');
}

interface PathCandidate {
  text: string;
  /** Entries of a `PATH=a:b`-style value may name system bin directories. */
  listEntry: boolean;
}

/** The path-like parts of a word: the word itself, or the value of `NAME=…` / `--opt=…`. */
function pathCandidates(word: ShellWord, isProgram: boolean): PathCandidate[] {
  const value = word.value;
  if (value.includes('://') || value.startsWith('$(') || value.startsWith('`')) return [];
  if (word.quoted && CODE_LIKE.test(value.replace(/\$\{\w+\}/g, ''))) return [];
  const assignment = /^-{0,2}[A-Za-z_][\w-]*=(.*)$/s.exec(value);
  if (assignment && !isProgram) {
    return (assignment[1] ?? '')
      .split(':')
      .filter((part) => part !== '')
      .map((text) => ({ text, listEntry: true }));
  }
  if (value.startsWith('-')) return [];
  return [{ text: value, listEntry: false }];
}

function expandVariables(text: string, context: ScopeContext): string {
  return text.replace(/^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/, (_match, name: string) => context.env[name] ?? '');
}

function isSystemBinPath(absolute: string): boolean {
  return SYSTEM_BIN_DIRS.some((dir) => isPathInside(absolute, dir));
}

/** Returns a description of why the path is out of bounds, or undefined when it is fine. */
function checkPathCandidate(candidate: PathCandidate, isProgram: boolean, context: ScopeContext): string | undefined {
  let text = candidate.text;
  if (/^~[^/]/.test(text)) return `another user's home directory (${text})`;
  if (/^[A-Za-z]:[\\/]/.test(text)) return `the Windows path ${text}`;
  if (text.startsWith('$')) {
    const bareVariable = /^\$\{?\w+\}?$/.test(text);
    text = expandVariables(text, context);
    // `echo $PATH` prints a list of directories; it does not open one.
    if (bareVariable && text.includes(':')) return undefined;
  }
  text = expandHome(text, context.homeDir);

  const explicit = path.isAbsolute(text);
  const absolute = path.resolve(context.allowRoots[1] ?? context.options.workspace, text);
  if (explicit && (SAFE_DEVICES.has(absolute) || SAFE_DEVICE_PATTERN.test(absolute))) return undefined;
  if (explicit && (isProgram || candidate.listEntry) && isSystemBinPath(absolute)) return undefined;

  const real = realpathNearest(absolute);
  if (context.allowRoots.some((root) => isPathInside(real, root))) return undefined;
  if (!explicit) {
    // A relative name that resolves outside went through a symlink; links into system bin dirs
    // (a virtualenv's python) cannot be used to write anything.
    if (isSystemBinPath(real)) return undefined;
    return `${candidate.text} (a symlink to ${real})`;
  }
  return candidate.text === text ? text : `${candidate.text} (${text})`;
}
