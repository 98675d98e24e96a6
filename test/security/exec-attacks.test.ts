/**
 * Red-team corpus for the exec guard (issue 15, item 7): the command classes that deleted a victim directory or
 * started a fork bomb past the deny list, each in many spellings, and the ordinary commands that must keep working.
 * The guard is the fast first line (the sandbox is what holds); these are checked through checkCommand only and are
 * never run here. exec-attacks-cli.test.ts runs the deletion attacks for real through the built CLI.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkCommand } from '../../src/security/exec-guard.js';
import { makeTempDir } from '../tools/helpers.js';
import { B64, DELETION_ATTACKS, FORK_BOMBS } from './exec-attack-corpus.js';

/** Ordinary commands that must keep working (no false positives). */
const LEGITIMATE = [
  'ls -la',
  'grep -r foo .',
  'echo $HOME',
  'for f in *.txt; do wc -l "$f"; done',
  'python3 script.py',
  'git log | head',
  'cat x | sort | uniq -c',
  "find . -name '*.ts' | xargs wc -l",
  'while IFS= read -r line; do echo "$line"; done < file.txt',
  'IFS=, read -ra parts <<< "$CSV"; echo "${parts[0]}"',
  'IFS=$\'\\n\'; for f in $(ls); do echo "$f"; done',
  'eval "$(ssh-agent -s)"',
  'source .venv/bin/activate && pip install -r requirements.txt',
  '. ./env.sh',
  'cat install.sh | sh',
  'echo "hello world" | bash -s',
  "python3 - <<'PY'\nprint(1)\nPY",
  'echo \'{"a":1}\' | python3 -m json.tool',
  "cat data.csv | python3 -c 'import sys; print(len(sys.stdin.read()))'",
  'base64 -d file.b64 > out.bin',
  'echo aGk= | base64 -d',
  "printf '%s\\n' b a | sort",
  'rev file.txt',
  'tr a-z A-Z < in.txt',
  '$(which python3) --version',
  '"$(git rev-parse --show-toplevel)/scripts/build.sh"',
  '$EDITOR notes.md',
  "alias ll='ls -la'; ll",
  'greet() { echo "hi $1"; }; greet bob',
  'countdown() { [ "$1" -gt 0 ] && countdown $(( $1 - 1 )); }; countdown 3',
  'make -j4 && ./run.sh &',
  'npm test & wait',
  'sleep 1 & wait',
  'x=$(date +%s); echo $x',
  'git diff | grep -c "^+"',
  "jq .name package.json | tr -d '\"'",
  'echo "a b c" | tr " " "\\n" | sort',
  'rm -f build.log',
  'docker ps --format "{{.Names}}" | sort',
];

function check(command: string) {
  const root = makeTempDir('nanobot-attacks-');
  const workspace = path.join(root, 'ws');
  fs.mkdirSync(workspace, { recursive: true });
  return checkCommand(command, { restrictToWorkspace: false, workspace, cwd: workspace, homeDir: root });
}

const allDeletion = Object.entries(DELETION_ATTACKS).flatMap(([cls, commands]) =>
  commands.map((command) => ({ cls, command })),
);

describe('exec guard attack corpus (deletion)', () => {
  it.each(allDeletion)('[$cls] blocks $command', ({ command }) => {
    const verdict = check(command);
    expect(verdict.ok, `not blocked: ${command}`).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toMatch(/^Command blocked by safety guard: /);
  });
});

describe('exec guard attack corpus (fork bombs)', () => {
  it.each(FORK_BOMBS)('blocks %s', (command) => {
    const verdict = check(command);
    expect(verdict.ok, `not blocked: ${command}`).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toMatch(/fork bomb/);
  });
});

describe('exec guard keeps ordinary commands working', () => {
  it.each(LEGITIMATE)('allows %s', (command) => {
    expect(check(command)).toEqual({ ok: true });
  });
});

describe('exec guard messages for the new classes', () => {
  it('says why generated text piped into a shell is refused and what to do instead', () => {
    const verdict = check(`echo ${B64} | base64 -d | sh`);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) {
      expect(verdict.reason).toMatch(/generated|decoded/);
      expect(verdict.reason).toMatch(/[Ww]rite the script to a file/);
    }
  });
});
