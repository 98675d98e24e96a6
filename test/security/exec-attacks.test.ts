/**
 * Red-team corpus for the exec guard (issue 15, item 7): the command classes that deleted a victim directory or
 * started a fork bomb past the deny list, each in many spellings, and the ordinary commands that must keep working.
 * The guard is the fast first line (the sandbox is what holds); these are checked through checkCommand only and are
 * never run here. exec-attacks-cli.test.ts runs the deletion attacks for real through the built CLI.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkCommandUrls } from '../../src/security/command-urls.js';
import { checkCommand } from '../../src/security/exec-guard.js';
import { createNetworkPolicy } from '../../src/security/network.js';
import { makeTempDir } from '../tools/helpers.js';
import { B64, DELETION_ATTACKS, FORK_BOMBS, SCHEMELESS_URL_ATTACKS } from './exec-attack-corpus.js';

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
  "trap 'rm -f .lock' EXIT; make",
  "find . -name '*.log' -exec sh -c 'wc -l \"$1\"' _ {} \\;",
  "find . -type f | xargs -I{} sh -c 'echo {}'",
  "bash -c 'echo $0 $1' a b",
  `node -e "require('fs').mkdirSync('out/dir', { recursive: true })"`,
  `python3 -c 'import shutil; shutil.copytree("a", "b")'`,
  'read -r name < name.txt; echo "hello $name"',
  'strace -f -o trace.txt ls',
  // Near the red team F6/F7 classes, and ordinary.
  "awk '{ print $1 }' data.txt",
  `awk 'BEGIN { system("ls -la") }'`,
  `awk '{ print $0 | "sort" }' data.txt`,
  `perl -e 'system("git", "status")'`,
  "perl -ne 'print if /rm -f/' log.txt",
  `python3 -c 'import subprocess; subprocess.run(["git", "status"])'`,
  `python3 -c 'import os; os.system("ls -la")'`,
  `python3 -c 'import os; pid = os.fork(); print(pid)'`,
  `ruby -e 'system("ls")'`,
  `node -e "require('child_process').execSync('git status')"`,
  'git -c core.pager=less log',
  "git -c core.pager='less -R' log",
  'git -c user.name=bot commit -m "rm -rf is dangerous"',
  'GIT_PAGER=cat git log',
  'GIT_SSH_COMMAND="ssh -i key" git fetch',
  'declare -n r=c; c=ls; $r -la',
  "find . -name '*.png' | xargs -P0 -n1 optipng",
  'yes | head -n 3',
  'yes | xargs -n1 -P4 echo | head',
  "find . -name '*.tmp' -delete",
  'u=example.com; curl https://$u/',
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

describe('URL guard sees scheme-less hosts (sandbox "none")', () => {
  it.each(SCHEMELESS_URL_ATTACKS.map((command) => command.replaceAll('PORT', '8080')))('blocks %s', (command) => {
    const verdict = checkCommandUrls(command);
    expect(verdict.ok, `not blocked: ${command}`).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toMatch(/^Command blocked by network guard: it targets /);
  });

  it.each([
    'sleep 0.5',
    'npm i foo@10.1.0',
    'docker run -p 8080:80 nginx',
    'date -d 12:30',
    'curl -m 5 https://example.com',
    'curl --retry 3 https://example.com/x',
    'nc -zv example.com 443',
    'nc example.com 8080',
    'curl https://93.184.216.34/',
    'python3 -c "print(1.5)"',
    'echo version 1.2.3',
    'git checkout v10.1',
    'head -n 10 file.txt',
    'ssh git@github.com',
    'scp build.tgz deploy@example.com:/srv/app',
    'psql -h db.example.com -p 5432',
    'ffmpeg -ss 00:01:30 -i in.mp4 out.mp4',
    "awk -F: '{print $1}' users.txt",
    'python3 -m http.server 8000',
    `python3 -c "print(('a', 1))"`,
  ])('allows %s', (command) => {
    expect(checkCommandUrls(command)).toEqual({ ok: true });
  });

  it('honours ssrfWhitelist for the new spellings too', () => {
    const policy = createNetworkPolicy({ whitelist: ['127.0.0.0/8'] });
    expect(checkCommandUrls('curl 127.1:8080 && nc 2130706433 80', policy)).toEqual({ ok: true });
    expect(checkCommandUrls('nc 0x0a.1 80', policy).ok).toBe(false);
  });
});
