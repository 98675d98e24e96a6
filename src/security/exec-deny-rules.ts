/**
 * nanobot's built-in exec deny list, checked on parsed simple commands rather than raw text, so quoting
 * (`"rm" -rf`), wrappers (`sudo`, `xargs`, `find -exec`) and nested shells (`sh -c '…'`) do not slip past,
 * while `git commit -m "reboot fix"` is not mistaken for a reboot.
 */
import path from 'node:path';
import type { ShellRedirect } from './shell-parse.js';

/** A simple command: its words (unquoted) and redirections. */
export interface SimpleCommand {
  words: string[];
  redirects: ShellRedirect[];
}

/** Programs that run the command given in their arguments. */
const WRAPPERS = new Set([
  'sudo',
  'doas',
  'env',
  'command',
  'builtin',
  'exec',
  'nohup',
  'nice',
  'ionice',
  'time',
  'timeout',
  'stdbuf',
  'xargs',
  'busybox',
  'setsid',
  'chrt',
  'taskset',
  'unbuffer',
  'strace',
  'ltrace',
  'unshare',
  'nsenter',
  'firejail',
  'faketime',
  'chroot',
]);
/** Shell keywords that may precede a command word. */
const KEYWORDS = new Set(['if', 'then', 'else', 'elif', 'while', 'until', 'do', '!', '{', '}', 'fi', 'done', 'esac']);
/** Wrapper options that take a separate value (`sudo -u root`, `xargs -I {}`, `nice -n 5`). */
const OPTIONS_WITH_VALUE: Record<string, string[]> = {
  sudo: ['-u', '-g', '-p', '-C', '-U', '-r', '-t', '-D', '-h'],
  doas: ['-u', '-C'],
  env: ['-u', '-C', '-S'],
  xargs: ['-I', '-P', '-L', '-n', '-s', '-d', '-E', '-a'],
  nice: ['-n'],
  ionice: ['-c', '-n', '-p'],
  timeout: ['-k', '-s'],
  stdbuf: ['-i', '-o', '-e'],
  chrt: ['-p'],
  taskset: ['-p'],
  strace: ['-o', '-e', '-p', '-s', '-u', '-E', '-P', '-I', '-b', '-a', '-X'],
  ltrace: ['-o', '-e', '-p', '-s', '-u', '-n', '-a'],
  nsenter: ['-t', '-S', '-G', '--target'],
  firejail: ['--profile', '--name'],
};
/** Wrappers whose first positional is not the program: `chroot DIR cmd`, `faketime TIME cmd`. */
const WRAPPER_FIRST_ARG = new Set(['chroot', 'faketime']);

export const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'ash', 'fish', 'su']);

const PROTECTED_FILE = /(?:^|[/\\])(history\.jsonl|\.dream_cursor)$/;
const RAW_PROTECTED_WRITE = />>?\|?\s*\S*(?:history\.jsonl|\.dream_cursor)/i;
const RAW_DISK_DEVICE = /^\/dev\/(?:sd|hd|vd|xvd|nvme|mmcblk|disk)/;
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

export const programName = (word: string): string =>
  path
    .basename(word)
    .toLowerCase()
    .replace(/\.exe$/, '');

/** Index of the program word, skipping assignments, keywords and wrappers with their options. */
export function programIndex(words: readonly string[]): number {
  let i = 0;
  while (i < words.length) {
    const word = words[i] as string;
    if (ASSIGNMENT.test(word) || KEYWORDS.has(word)) {
      i++;
      continue;
    }
    const name = programName(word);
    if (!WRAPPERS.has(name)) return i;
    i++;
    const valued = OPTIONS_WITH_VALUE[name] ?? [];
    while (i < words.length && ((words[i] as string).startsWith('-') || ASSIGNMENT.test(words[i] as string))) {
      i += valued.includes(words[i] as string) ? 2 : 1;
    }
    // `timeout 10 cmd`: the duration is not the program.
    if (name === 'timeout' && /^\d/.test(words[i] ?? '')) i++;
    if (WRAPPER_FIRST_ARG.has(name)) i++;
  }
  return i;
}

const isOption = (word: string): boolean => word.startsWith('-') && word !== '-';

function positionals(words: readonly string[]): string[] {
  return words.filter((word) => !isOption(word));
}

function checkRecursiveDelete(words: readonly string[]): string | undefined {
  for (let i = 0; i < words.length; i++) {
    if (programName(words[i] as string) !== 'rm') continue;
    for (const arg of words.slice(i + 1)) {
      if (arg === '--') break;
      if (/^-[a-zA-Z]*[rR]/.test(arg) || arg === '--recursive') return 'recursive delete (rm -r)';
    }
  }
  return undefined;
}

function checkProtectedWrites(cmd: SimpleCommand, program: string, args: string[]): string | undefined {
  const reason = (file: string) =>
    `write to ${path.basename(file)} (nanobot manages this file; editing it by hand corrupts memory)`;
  for (const { op, target } of cmd.redirects) {
    if (op.includes('>') && PROTECTED_FILE.test(target.value)) return reason(target.value);
  }
  const hit = (word: string) => PROTECTED_FILE.test(word);
  const files = positionals(args);
  if (program === 'tee' || program === 'truncate' || program === 'mv') {
    const file = files.find(hit);
    if (file) return reason(file);
  }
  if (['cp', 'install', 'ln', 'rsync', 'scp'].includes(program) && files.length > 1) {
    const destination = files.at(-1) as string;
    if (hit(destination)) return reason(destination);
  }
  if (program === 'dd') {
    const output = args.find((arg) => arg.startsWith('of=') && hit(arg.slice(3)));
    if (output) return reason(output.slice(3));
  }
  const inPlace = args.some((arg) => arg === '--in-place' || /^-[a-zA-Z]*i/.test(arg));
  if ((program === 'sed' || program === 'perl') && inPlace) {
    const file = files.find(hit);
    if (file) return reason(file);
  }
  return undefined;
}

/** Interpreters whose inline code (`python3 -c`, `perl -e`, `node -e`) can run shell commands or write files. */
export const INTERPRETER = /^(?:python[\d.]*|pypy[\d.]*|perl|ruby|node|nodejs|deno|bun|php|lua[\d.]*)$/;
const INLINE_CODE_FLAG = /^-[a-zA-Z]*[ceErx]$|^--eval$/;
const INLINE_RECURSIVE_DELETE =
  /\brm\s+(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\b|\b(?:rmtree|rm_rf|rm_r|remove_tree|rimraf|removedirs)\b|\b(?:rm|rmdir|rmSync|rmdirSync|remove)\s*\([^)]*\brecursive\s*:\s*true\b/;
const INLINE_PROTECTED_FILE = /history\.jsonl|\.dream_cursor/;
const INLINE_WRITE =
  /['"][wax]b?\+?['"]|\b(?:write|unlink|remove|rename|replace|truncate|rmtree|writeFile\w*|appendFile\w*)\b|>/;

/**
 * Inline code is not parsed, only searched: `os.system("rm -rf x")` and `open("history.jsonl", "w")` are the
 * bypasses users reported. (A script file, or shutil.rmtree, still gets past: the sandbox is the real fence.)
 */
function checkInlineCode(program: string, args: string[]): string | undefined {
  if (!INTERPRETER.test(program)) return undefined;
  for (let i = 0; i < args.length - 1; i++) {
    if (!INLINE_CODE_FLAG.test(args[i] as string)) continue;
    const code = args[i + 1] as string;
    if (INLINE_RECURSIVE_DELETE.test(code)) return 'recursive delete (rm -r) in inline code';
    if (INLINE_PROTECTED_FILE.test(code) && INLINE_WRITE.test(code)) {
      return 'write to history.jsonl or .dream_cursor in inline code (nanobot manages these files)';
    }
  }
  return undefined;
}

/** A shell that reads its script from stdin (`… | sh`, `… | bash -s`): what is piped in runs as commands. */
export function isStdinShell(words: readonly string[]): boolean {
  const start = programIndex(words);
  if (!SHELLS.has(programName(words[start] ?? ''))) return false;
  const args = words.slice(start + 1);
  if (args.some((arg) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(arg))) return false;
  return args.includes('-s') || positionals(args).length === 0;
}

/** Returns why a simple command is denied by the built-in list, or undefined. */
export function builtInDenyReason(cmd: SimpleCommand): string | undefined {
  const { words } = cmd;
  const start = programIndex(words);
  const program = programName(words[start] ?? '');
  const args = words.slice(start + 1);

  const recursive = checkRecursiveDelete(words);
  if (recursive) return recursive;
  if ((program === 'del' || program === 'erase') && args.some((arg) => /^\/[fq]$/i.test(arg))) {
    return 'forced delete (del /f or /q)';
  }
  if ((program === 'rmdir' || program === 'rd') && args.some((arg) => /^\/s$/i.test(arg))) {
    return 'recursive directory delete (rmdir /s)';
  }
  if (program === 'format' || program === 'format.com') return 'disk format (format)';
  if (words.some((word) => /^(?:mkfs(?:\.\w+)?|diskpart)$/.test(programName(word)))) {
    return 'disk formatting or partitioning (mkfs/diskpart)';
  }
  const ddAt = words.findIndex((word) => programName(word) === 'dd');
  if (ddAt !== -1 && words.slice(ddAt + 1).some((word) => word.startsWith('if='))) return 'raw disk copy (dd if=)';
  for (const { op, target } of cmd.redirects) {
    if (op.includes('>') && RAW_DISK_DEVICE.test(target.value)) return `write to disk device ${target.value}`;
  }
  if (
    ['shutdown', 'reboot', 'poweroff', 'halt'].includes(program) ||
    (program === 'systemctl' && args.some((arg) => ['poweroff', 'reboot', 'halt', 'kexec'].includes(arg))) ||
    ((program === 'init' || program === 'telinit') && (args[0] === '0' || args[0] === '6'))
  ) {
    return 'system shutdown or reboot';
  }
  return checkInlineCode(program, args) ?? checkProtectedWrites(cmd, program, args);
}

/** Raw-text rules for what a parser cannot see as one segment (fork bombs span `|`, `&` and `;`). */
export function rawDenyReason(command: string): string | undefined {
  if (/:\(\)\s*\{.*\};\s*:/s.test(command) || /(\w+)\s*\(\)\s*\{[^}]*\b\1\s*\|\s*\1\b[^}]*&/s.test(command)) {
    return 'fork bomb';
  }
  if (RAW_PROTECTED_WRITE.test(command)) {
    return 'write to history.jsonl or .dream_cursor (nanobot manages these files; editing them by hand corrupts memory)';
  }
  return undefined;
}

const COMMAND_STRING_RUNNERS = new Set(['script', 'flock', 'runuser']);

/**
 * Commands a simple command runs on behalf of its arguments: `sh -c '…'`, `eval …`, here-docs fed to a
 * shell, `find -exec …`. Returned as command strings (to re-parse) or word lists (already split).
 */
export function nestedCommands(
  words: readonly string[],
  heredocs: readonly string[],
  redirects: readonly ShellRedirect[],
): { scripts: string[]; commands: string[][] } {
  const scripts: string[] = [];
  const commands: string[][] = [];
  const start = programIndex(words);
  const program = programName(words[start] ?? '');
  const args = words.slice(start + 1);
  if (SHELLS.has(program)) {
    const flagAt = args.findIndex((arg) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(arg));
    const script = flagAt === -1 ? undefined : args[flagAt + 1];
    if (script !== undefined) scripts.push(script);
    if (flagAt === -1) {
      scripts.push(...heredocs);
      for (const { op, target } of redirects) if (op === '<<<') scripts.push(target.value);
    }
  }
  if (program === 'eval' || program === 'watch') scripts.push(positionals(args).join(' '));
  // Programs that run a shell command string: `trap 'cmd' EXIT`, `script -c 'cmd'`, `flock f -c 'cmd'`, `runuser -c`.
  if (program === 'trap' && args[0] !== undefined && !isOption(args[0])) scripts.push(args[0]);
  if (COMMAND_STRING_RUNNERS.has(program)) {
    const flagAt = args.findIndex((arg) => arg === '-c' || arg === '--command' || /^-[a-zA-Z]*c$/.test(arg));
    const script = flagAt === -1 ? undefined : args[flagAt + 1];
    if (script !== undefined) scripts.push(script);
  }
  // `env -S 'cmd args'` splits its string into a command line.
  const splitAt = words.findIndex((word, i) => i < start && (word === '-S' || word === '--split-string'));
  const splitString = splitAt === -1 ? undefined : words[splitAt + 1];
  if (splitString !== undefined) scripts.push(splitString);
  if (program === 'find') {
    for (let i = 0; i < args.length; i++) {
      if (!['-exec', '-execdir', '-ok', '-okdir'].includes(args[i] as string)) continue;
      const end = args.findIndex((arg, j) => j > i && (arg === ';' || arg === '+'));
      commands.push(args.slice(i + 1, end === -1 ? undefined : end));
    }
  }
  return { scripts, commands };
}
