/**
 * The exec guard: decides whether a shell command may run. Regex and parser checks are advisory (a model
 * can always write a Python script that deletes things); the workspace restriction is the part users rely
 * on, so it is checked on real paths, per segment, inside substitutions and nested shells too.
 */
import os from 'node:os';
import path from 'node:path';
import { carriedCommands, spawnLoopReason } from './exec-carried.js';
import {
  builtInDenyReason,
  isStdinShell,
  nestedCommands,
  programIndex,
  programName,
  rawDenyReason,
  type SimpleCommand,
} from './exec-deny-rules.js';
import { ASSIGNMENT_WORD, collectAssignments, dynamicRecursiveCall, expandAssigned, splitter } from './exec-expand.js';
import {
  commandWordFromArguments,
  expandFunctionCall,
  findFunctions,
  forkBombFunction,
  generatorInSubstitution,
  hasUnquotedIfs,
  pipedSourceReason,
  readsScriptFromStdin,
  runtimeVariables,
  scriptReader,
} from './exec-indirection.js';
import { BLOCKED, blocked, type CommandCheck } from './exec-verdict.js';
import { checkWorkspaceScope } from './exec-workspace-scope.js';
import { parseShellCommand, type ShellSegment, type ShellWord } from './shell-parse.js';
import { realpathNearest } from './workspace.js';

export type { CommandCheck } from './exec-verdict.js';

export interface CommandGuardOptions {
  /** Extra deny regexes (searched, case-insensitive), added to the built-in list. */
  denyPatterns?: string[];
  /** Full-match regexes; when non-empty, every segment must match one (an allowlist that also bypasses deny). */
  allowPatterns?: string[];
  restrictToWorkspace: boolean;
  workspace: string;
  /** Directory the command runs in. */
  cwd: string;
  /** Home directory for `~` expansion; defaults to the user's home. */
  homeDir?: string;
  /** Variables the child shell will see, used to expand `$VAR/…` paths; defaults to `{ HOME, PWD }`. */
  env?: Record<string, string | undefined>;
}

interface GuardContext {
  options: CommandGuardOptions;
  allowRoots: string[];
  homeDir: string;
  env: Record<string, string | undefined>;
  /** Shell variables the command line itself assigns (`X=rm; $X -rf …`). */
  assignments: Map<string, string>;
  checkDeny: boolean;
  /** Functions and aliases the command defines, by name (bodies re-checked at each call). */
  functions: Map<string, string>;
  aliases: Map<string, string>;
  /** Variables the command fills from input at run time (`read c`): never a checkable command name. */
  runtimeVariables: Set<string>;
  /** How many function/alias calls may still be expanded (recursive definitions stop here). */
  budget: { expansions: number };
}

function compile(patterns: string[], flags: string, wrap: (p: string) => string): RegExp[] | string {
  const compiled: RegExp[] = [];
  for (const pattern of patterns) {
    try {
      compiled.push(new RegExp(wrap(pattern), flags));
    } catch {
      return pattern;
    }
  }
  return compiled;
}

/** Checks a command before it runs. Never throws. */
export function checkCommand(command: string, options: CommandGuardOptions): CommandCheck {
  const trimmed = command.trim();
  if (trimmed === '') return { ok: false, reason: `${BLOCKED}: the command is empty.` };

  const allow = compile(options.allowPatterns ?? [], 's', (p) => `^(?:${p})$`);
  const deny = compile(options.denyPatterns ?? [], 'i', (p) => p);
  if (typeof allow === 'string') return { ok: false, reason: `${BLOCKED}: invalid allow pattern /${allow}/.` };
  if (typeof deny === 'string') return { ok: false, reason: `${BLOCKED}: invalid deny pattern /${deny}/.` };

  const segments = parseShellCommand(trimmed);
  let allowListed = false;
  if (allow.length > 0) {
    const unmatched = segments.find((segment) => !allow.some((re) => re.test(segment.raw)));
    if (unmatched)
      return blocked('not in the allowlist (every chained command must match an allow pattern)', unmatched.raw);
    allowListed = true;
  }

  const assignments = collectAssignments(segments, new Map());
  // `HOME=/etc; cat ~/passwd`: tilde follows the HOME the command sets.
  const homeDir = assignments.get('HOME') ?? options.homeDir ?? os.homedir();
  const cwd = path.resolve(options.workspace, options.cwd);
  const context: GuardContext = {
    options,
    homeDir,
    env: { HOME: homeDir, PWD: cwd, ...options.env, ...Object.fromEntries(assignments) },
    assignments,
    allowRoots: [realpathNearest(options.workspace), realpathNearest(cwd)],
    checkDeny: !allowListed,
    functions: new Map(),
    aliases: new Map(),
    runtimeVariables: new Set(),
    budget: { expansions: 64 },
  };

  if (context.checkDeny) {
    const raw = rawDenyReason(trimmed);
    if (raw) return blocked(raw, trimmed);
    for (const re of deny) {
      const hit = [trimmed, ...segments.map((segment) => segment.raw)].find((text) => re.test(text));
      if (hit !== undefined) return blocked(`matches deny pattern /${re.source}/`, hit);
    }
  }
  return checkSegments(segments, trimmed, context, 0);
}

function checkSegments(segments: ShellSegment[], script: string, outer: GuardContext, nesting: number): CommandCheck {
  const context =
    nesting === 0
      ? outer
      : {
          ...outer,
          assignments: collectAssignments(segments, outer.assignments),
          functions: new Map(outer.functions),
          aliases: new Map(outer.aliases),
          runtimeVariables: new Set(outer.runtimeVariables),
        };
  if (context.checkDeny) {
    const definitions = checkDefinitions(segments, script, context, nesting);
    if (!definitions.ok) return definitions;
  }
  const stdinShell = segments.some((segment) => isStdinShell(segment.words.map((word) => word.value)));
  for (const [index, segment] of segments.entries()) {
    const shellWords = expandAssigned(segment.words, context.assignments);
    const words = shellWords.map((word) => word.value);
    const simple: SimpleCommand = { words, redirects: segment.redirects };
    if (context.checkDeny && dynamicRecursiveCall(words)) {
      return blocked('recursive flag on a command whose name is only known at run time', segment.raw);
    }
    const verdict = checkSimpleCommand(simple, shellWords, segment.raw, context);
    if (!verdict.ok) return verdict;

    // `echo "rm -rf x" | sh`: text piped into a shell is a script too.
    if (stdinShell && nesting < 8) {
      for (const word of words.filter((value) => /\s/.test(value.trim()))) {
        const inner = checkNestedScript(word, context, nesting + 1);
        if (!inner.ok) return inner;
      }
    }
    if (context.checkDeny) {
      const hidden = checkIndirection(segments, index, simple, context, nesting);
      if (!hidden.ok) return hidden;
    }

    if (context.checkDeny) {
      const spawnLoop = spawnLoopReason(segments, index);
      if (spawnLoop) return blocked(spawnLoop, segment.raw);
    }
    // `awk 'BEGIN{system("…")}'`, `git -c core.pager=…`, `GIT_SSH_COMMAND=…`: a command line run on its behalf.
    for (const carried of carriedCommands(words)) {
      if (nesting >= 8) return blocked('commands nested too deeply to check', segment.raw);
      const inner = checkNestedScript(carried, context, nesting + 1);
      if (!inner.ok) return inner;
    }

    const nested = nestedCommands(words, segment.heredocs, segment.redirects);
    if (nested.scripts.length > 0 && nesting >= 8) return blocked('shells nested too deeply to check', segment.raw);
    for (const script of nested.scripts) {
      const inner = checkNestedScript(script, context, nesting + 1);
      if (!inner.ok) return inner;
    }
    for (const subWords of nested.commands) {
      const subCommand: SimpleCommand = { words: subWords, redirects: [] };
      const shellWords = subWords.map((value) => ({ value, quoted: false }));
      const inner = checkSimpleCommand(subCommand, shellWords, segment.raw, context);
      if (!inner.ok) return inner;
      // `find -exec sh -c '…' \;`: the shell's script is a script too.
      for (const script of nestedCommands(subWords, [], []).scripts) {
        const nestedVerdict = nesting < 8 ? checkNestedScript(script, context, nesting + 1) : inner;
        if (!nestedVerdict.ok) return nestedVerdict;
      }
    }
  }
  return { ok: true };
}

/** IFS splitting, fork-bomb functions and alias values: what a script defines before it runs anything. */
function checkDefinitions(
  segments: ShellSegment[],
  script: string,
  context: GuardContext,
  nesting: number,
): CommandCheck {
  if (hasUnquotedIfs(script)) return blocked('word splitting on $IFS (it hides the real command)', script);
  const functions = findFunctions(script);
  const bomb = forkBombFunction(functions);
  if (bomb) return blocked(`fork bomb (function \`${bomb}\` calls itself in a pipe or in the background)`, script);
  for (const fn of functions) context.functions.set(fn.name, fn.body);
  for (const name of runtimeVariables(segments)) context.runtimeVariables.add(name);
  for (const segment of segments) {
    const words = segment.words.map((word) => word.value);
    if (programName(words[programIndex(words)] ?? '') !== 'alias') continue;
    for (const word of words.slice(programIndex(words) + 1)) {
      const definition = ASSIGNMENT_WORD.exec(word);
      if (!definition) continue;
      context.aliases.set(definition[1] as string, definition[2] as string);
      if (nesting >= 8) return blocked('aliases nested too deeply to check', segment.raw);
      const inner = checkNestedScript(definition[2] as string, context, nesting + 1);
      if (!inner.ok) return inner;
    }
  }
  return { ok: true };
}

/**
 * Commands whose text only exists at run time: a command name made by a decoder or split by a custom IFS, a call to
 * an alias or function the command defines, generated text fed to a shell or interpreter.
 */
function checkIndirection(
  segments: ShellSegment[],
  index: number,
  command: SimpleCommand,
  context: GuardContext,
  nesting: number,
): CommandCheck {
  const segment = segments[index] as ShellSegment;
  const { words } = command;
  const start = programIndex(words);
  const word = words[start] ?? '';
  const program = programName(word);
  const generator = /\$\(|`/.test(word) ? generatorInSubstitution(word) : undefined;
  if (generator) return blocked(`command name generated at run time by \`${generator}\``, segment.raw);
  if (word.includes('$') && context.assignments.has('IFS') && splitter(context.assignments).source !== '\\s+') {
    return blocked('command name split out of a variable by a custom IFS', segment.raw);
  }
  const readName = [...word.matchAll(/\$\{?([A-Za-z_]\w*)/g)].find((m) => context.runtimeVariables.has(m[1] as string));
  if (readName) return blocked(`command name read from input at run time (\`$${readName[1]}\`)`, segment.raw);

  const body = context.aliases.get(program) ?? context.functions.get(program);
  if (body !== undefined && nesting < 8 && context.budget.expansions > 0) {
    context.budget.expansions--;
    const args = words.slice(start + 1);
    const call = context.aliases.has(program) ? [body, ...args].join(' ') : expandFunctionCall(body, args);
    const inner = checkNestedScript(call, context, nesting + 1);
    if (!inner.ok) return inner;
  }

  const reader = scriptReader(program);
  if (!reader) return { ok: true };
  if (reader === 'shell') {
    const shellScript = checkShellArguments(words, start, segment.raw, context, nesting);
    if (!shellScript.ok) return shellScript;
  }
  if (readsScriptFromStdin(words)) {
    const source = pipedSourceReason(segments, index);
    if (source) {
      return blocked(
        `text generated or decoded by ${source} piped into \`${program}\` (the guard cannot see what it runs)`,
        segment.raw,
        '. Write the script to a file in the workspace and run it instead',
      );
    }
  }
  // `sh <(…)`, `python3 -c "$(…)"`, `python3 <<< "$(…)"`: the script itself comes out of a decoder.
  const fed = [...words.slice(start + 1), ...segment.redirects.map((r) => r.target.value), ...segment.heredocs];
  for (const text of fed) {
    const made = generatorInSubstitution(text);
    if (made) {
      return blocked(
        `script for \`${program}\` generated or decoded at run time by \`${made}\``,
        segment.raw,
        '. Write the script to a file in the workspace and run it instead',
      );
    }
  }
  return { ok: true };
}

/**
 * `sh -c 'script' a b`: the script's `$0`, `$1`, `$@` are the arguments after it, so it is checked with them filled
 * in; under xargs they come from input, so a script whose command word is one of them (or `{}`) is refused.
 */
function checkShellArguments(
  words: string[],
  start: number,
  raw: string,
  context: GuardContext,
  nesting: number,
): CommandCheck {
  const args = words.slice(start + 1);
  const flagAt = args.findIndex((arg) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(arg));
  const script = flagAt === -1 ? undefined : args[flagAt + 1];
  if (script === undefined) return { ok: true };
  const xargsAt = words.slice(0, start).findIndex((word) => programName(word) === 'xargs');
  if (xargsAt !== -1) {
    const replaceAt = words.findIndex((word, i) => i > xargsAt && i < start && word === '-I');
    const placeholder = replaceAt === -1 ? '{}' : (words[replaceAt + 1] ?? '{}');
    if (commandWordFromArguments(script, placeholder)) {
      return blocked('command name filled in from xargs input at run time', raw);
    }
  }
  const rest = args.slice(flagAt + 2);
  if (rest.length === 0 || nesting >= 8) return { ok: true };
  const zero = rest[0] as string;
  const filled = expandFunctionCall(script.replace(/\$\{0\}|\$0(?!\d)/g, zero), rest.slice(1));
  return checkNestedScript(filled, context, nesting + 1);
}

function checkNestedScript(script: string, context: GuardContext, nesting: number): CommandCheck {
  if (context.checkDeny) {
    const raw = rawDenyReason(script);
    if (raw) return blocked(raw, script);
  }
  return checkSegments(parseShellCommand(script), script, context, nesting);
}

function checkSimpleCommand(
  command: SimpleCommand,
  words: ShellWord[],
  raw: string,
  context: GuardContext,
): CommandCheck {
  if (context.checkDeny) {
    const reason = builtInDenyReason(command);
    if (reason) return blocked(reason, raw);
  }
  if (!context.options.restrictToWorkspace) return { ok: true };
  return checkWorkspaceScope(command, words, raw, context);
}
