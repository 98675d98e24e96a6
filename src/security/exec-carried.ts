/**
 * Command lines a simple command carries for something else to run: the shell-outs in inline interpreter code
 * (`awk 'BEGIN{system("…")}'`, `perl -e 'system("rm", "-rf", …)'`, `subprocess.run([...])`), git settings that name a
 * program (`git -c core.pager=…`, `GIT_SSH_COMMAND=…`), and inline or piped spawn loops that never stop (a fork
 * bomb written as a loop). The guard re-checks each carried command line with every rule. Advisory, like the rest of
 * the deny list: the literals are found by searching the code, not by running it.
 */
import { INTERPRETER, programIndex, programName } from './exec-deny-rules.js';
import type { ShellSegment } from './shell-parse.js';

const AWK = /^(?:awk|gawk|mawk|nawk|busybox-awk)$/;
const INLINE_CODE_FLAG = /^-[a-zA-Z]*[ceErx]$|^--eval$/;

/** The inline program texts of a command: awk's program argument, an interpreter's `-c`/`-e` code. */
function inlineCode(program: string, args: readonly string[]): string[] {
  if (AWK.test(program)) {
    // awk's program is its first operand (or every -e/--source value); which one it is does not matter here.
    return args.filter((arg) => !/^-[a-zA-Z]$/.test(arg));
  }
  if (!INTERPRETER.test(program)) return [];
  const code: string[] = [];
  for (let i = 0; i < args.length - 1; i++)
    if (INLINE_CODE_FLAG.test(args[i] as string)) code.push(args[i + 1] as string);
  return code;
}

/** A quoted literal (`"…"`, `'…'`) with the usual backslash escapes; text between literals is given as `gap`. */
const LITERAL = /"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'/gs;

/**
 * The literals of one call's argument list, starting at `from` (just after the opening parenthesis or the call's
 * name): `("rm", "-rf", x)`, `"r" "m -rf x"` (awk concatenation), `"rm" + " -rf x"`, `["rm", "-rf", "x"]`. Strings
 * joined by a concatenation operator are glued; strings separated by a comma are separate words.
 */
function callLiterals(code: string, from: number): string | undefined {
  const end = Math.min(code.length, from + 2000);
  const words: string[] = [];
  let current = '';
  let seen = false;
  let at = from;
  LITERAL.lastIndex = from;
  for (let match = LITERAL.exec(code); match && match.index < end; match = LITERAL.exec(code)) {
    const gap = code.slice(at, match.index);
    // A statement end or a closing of the call ends the list.
    if (/[;\n{}]/.test(gap) || (/\)/.test(gap) && !/\(/.test(gap))) break;
    const value = (match[1] ?? match[2] ?? '').replace(/\\(.)/g, '$1');
    if (seen && /,/.test(gap)) {
      words.push(current);
      current = value;
    } else current += value;
    seen = true;
    at = match.index + match[0].length;
  }
  if (!seen) return undefined;
  words.push(current);
  return words.join(' ');
}

/** Calls that hand their argument(s) to a shell or run them as a program. */
const SHELL_OUT =
  /\b(?:system|exec|execSync|execFileSync|spawnSync|spawn|execFile|popen|run|call|check_call|check_output|Popen|getoutput|getstatusoutput|execvp?e?|execlp?e?|spawnv?p?e?|pipe_open)\s*[(\s]/g;

const CODE_ASSIGNMENT = /(\$?[A-Za-z_]\w*)\s*=\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')/g;

/** `c = "rm"; system(c . " -rf x")`: variables the code sets to a literal, put in place as that literal. */
function inlineLiterals(code: string): string {
  const values = new Map<string, string>();
  for (const match of code.matchAll(CODE_ASSIGNMENT)) values.set(match[1] as string, match[2] as string);
  if (values.size === 0) return code;
  const names = [...values.keys()].sort((a, b) => b.length - a.length).map((name) => name.replace(/\$/g, '\\$'));
  const reference = new RegExp(`(?<![\\w$])(?:${names.join('|')})(?!\\w)(?!\\s*=[^=])`, 'g');
  return code.replace(reference, (name) => values.get(name) as string);
}

/** Command lines inline code runs: each shell-out's literal arguments, and awk text printed into a shell. */
function shellOutsOf(source: string): string[] {
  const found: string[] = [];
  const code = inlineLiterals(source);
  for (const match of code.matchAll(SHELL_OUT)) {
    const line = callLiterals(code, (match.index ?? 0) + match[0].length);
    if (line) found.push(line);
  }
  // awk: `print "…" | "sh"`; perl: open(F, "| sh") is rare enough to leave to the sandbox.
  for (const match of code.matchAll(/print\s+("(?:[^"\\]|\\.)*")\s*\|\s*"\s*(?:\/bin\/)?(?:ba|da|z)?sh\b/g)) {
    found.push((match[1] as string).slice(1, -1));
  }
  return found;
}

/** git settings whose value is a command git runs. */
const GIT_COMMAND_SETTING =
  /^(?:core\.(?:pager|sshcommand|editor|fsmonitor|askpass|hookspath)|pager\.[\w.-]+|sequence\.editor|alias\.[\w.-]+|diff\.[\w.-]+\.(?:textconv|command)|filter\.[\w.-]+\.(?:clean|smudge|process)|credential\.helper|gpg\.program|uploadpack\.packobjectshook)$/i;
/** Environment variables whose value is a command another program runs. */
const COMMAND_VARIABLE =
  /^(?:GIT_(?:PAGER|SSH_COMMAND|SSH|EDITOR|SEQUENCE_EDITOR|ASKPASS|EXTERNAL_DIFF|PROXY_COMMAND)|PAGER|MANPAGER|EDITOR|VISUAL|SSH_ASKPASS|SUDO_ASKPASS|BROWSER|LESSOPEN|PROMPT_COMMAND)=(.*)$/s;

/** `git -c key=value …`, `git config key value`, `GIT_PAGER=… git …`, `export PAGER=…`: the commands they set. */
function configuredCommands(words: readonly string[], program: string, start: number): string[] {
  const found: string[] = [];
  for (const word of words) {
    const variable = COMMAND_VARIABLE.exec(word);
    if (variable) found.push(variable[1] as string);
  }
  if (program !== 'git') return found;
  const args = words.slice(start + 1);
  const setting = (key: string, value: string) => {
    if (GIT_COMMAND_SETTING.test(key)) found.push(value.replace(/^!/, ''));
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '-c' || arg === '--config') {
      const pair = /^([^=]+)=(.*)$/s.exec(args[i + 1] ?? '');
      if (pair) setting(pair[1] as string, pair[2] as string);
    } else if (/^(?:-c|--config=)./.test(arg)) {
      const pair = /^(?:-c|--config=)([^=]+)=(.*)$/s.exec(arg);
      if (pair) setting(pair[1] as string, pair[2] as string);
    }
  }
  const configAt = args.indexOf('config');
  if (configAt !== -1) {
    const rest = args.slice(configAt + 1).filter((arg) => !arg.startsWith('-'));
    if (rest[0] === 'set') rest.shift();
    if (rest.length >= 2) setting(rest[0] as string, rest[1] as string);
  }
  return found;
}

/** The command lines a simple command carries for an interpreter, git, or a pager variable to run. */
export function carriedCommands(words: readonly string[]): string[] {
  const start = programIndex(words);
  const program = programName(words[start] ?? '');
  const args = words.slice(start + 1);
  return [...inlineCode(program, args).flatMap(shellOutsOf), ...configuredCommands(words, program, start)];
}

/** An endless loop around a fork/spawn in inline code: `fork while 1`, `while True: os.fork()`, `loop { fork }`. */
const FORK_CALL = /\b(?:fork|forkpty|spawn|Popen|execSync|spawnSync)\b/;
const ENDLESS_LOOP =
  /\bwhile\s*\(?\s*(?:1|true|True|!0|not\s+0)\s*(?:\)|:|\{|;|\bdo\b|$)|\buntil\s*\(?\s*(?:0|false|False)\b|\bfor\s*\(\s*;\s*;\s*\)|\bloop\s*(?:\{|do\b)|\bwhile\s*\(\s*\)|\biter\s*\(\s*int\s*,|\bitertools\.count\b|\brepeat\s*\{/;

/** Sources that never end (`yes`, `seq inf`, `/dev/zero`): piped into `xargs -P0`, they spawn without bound. */
function endlessSource(words: readonly string[]): boolean {
  const start = programIndex(words);
  const program = programName(words[start] ?? '');
  const args = words.slice(start + 1);
  if (program === 'yes') return true;
  if (program === 'seq' && args.some((arg) => /^[+]?inf(?:inity)?$/i.test(arg))) return true;
  return ['cat', 'head', 'tail', 'tr'].includes(program) && args.some((arg) => /^\/dev\/(?:u?random|zero)$/.test(arg));
}

const unboundedParallel = (words: readonly string[]): boolean => {
  const at = words.findIndex((word) => programName(word) === 'xargs' || programName(word) === 'parallel');
  if (at === -1) return false;
  const args = words.slice(at + 1);
  return args.some(
    (arg, i) =>
      /^(?:-P0|--max-procs=0|-j0|--jobs=0)$/.test(arg) ||
      (/^(?:-P|--max-procs|-j|--jobs)$/.test(arg) && args[i + 1] === '0'),
  );
};

/** Why segment `index` spawns processes without bound (an inline fork loop, `yes | xargs -P0 …`), or undefined. */
export function spawnLoopReason(segments: readonly ShellSegment[], index: number): string | undefined {
  const segment = segments[index] as ShellSegment;
  const words = segment.words.map((word) => word.value);
  const start = programIndex(words);
  const program = programName(words[start] ?? '');
  for (const code of inlineCode(program, words.slice(start + 1))) {
    if (FORK_CALL.test(code) && ENDLESS_LOOP.test(code)) return 'fork bomb (a fork in an endless loop in inline code)';
  }
  if (segment.pipeIn && unboundedParallel(words)) {
    const source = segments[index - 1];
    if (source && endlessSource(source.words.map((word) => word.value))) {
      return 'fork bomb (an endless input piped into unbounded parallel spawning, xargs -P0)';
    }
  }
  return undefined;
}
