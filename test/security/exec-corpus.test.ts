/**
 * The exec security corpus: every command here must be blocked, one named test per case, so a regression
 * names the bypass. Deny-list cases only go through the guard (checkCommand) and are never run; workspace
 * escapes go through the exec tool with restrictToWorkspace, where a miss would only read a temp file.
 * Behaviour around the guard (allowlists, false positives, messages) lives in exec-guard.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkCommand } from '../../src/security/exec-guard.js';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createExecTool } from '../../src/tools/exec.js';
import { makeContext, makeTempDir, textOf } from '../tools/helpers.js';

interface Case {
  name: string;
  command: string;
  /** What the block message must say. */
  reason: RegExp;
}

function guardReason(command: string): string | undefined {
  const root = makeTempDir('nanobot-corpus-');
  const workspace = path.join(root, 'ws');
  fs.mkdirSync(path.join(workspace, 'memory'), { recursive: true });
  const verdict = checkCommand(command, { restrictToWorkspace: false, workspace, cwd: workspace, homeDir: root });
  return verdict.ok ? undefined : verdict.reason;
}

const expectBlocked = ({ command, reason }: Case) => {
  const message = guardReason(command);
  expect(message, `not blocked: ${command}`).toBeDefined();
  expect(message).toMatch(/^Command blocked by safety guard: /);
  expect(message).toMatch(reason);
};

const RECURSIVE = /recursive delete|recursive flag/;
const MEMORY = /history\.jsonl|\.dream_cursor/;

describe('nanobot built-in deny list', () => {
  it.each<Case>([
    { name: 'rm -r', command: 'rm -r build', reason: RECURSIVE },
    { name: 'rm -rf', command: 'rm -rf build', reason: RECURSIVE },
    { name: 'rm -fr', command: 'rm -fr build', reason: RECURSIVE },
    { name: 'rm -Rf', command: 'rm -Rf build', reason: RECURSIVE },
    { name: 'rm --recursive', command: 'rm --recursive build', reason: RECURSIVE },
    { name: 'rm -r -f (separate flags)', command: 'rm -r -f build', reason: RECURSIVE },
    { name: 'rm with the flag after the path', command: 'rm build -rf', reason: RECURSIVE },
    { name: 'rm -rf /', command: 'rm -rf /', reason: RECURSIVE },
    { name: 'del /f', command: 'del /f C:\\Windows\\x', reason: /forced delete/ },
    { name: 'del /q', command: 'del /q C:\\Windows\\x', reason: /forced delete/ },
    { name: 'DEL /F in capitals', command: 'DEL /F x', reason: /forced delete/ },
    { name: 'rmdir /s', command: 'rmdir /s C:\\Users', reason: /rmdir \/s/ },
    { name: 'rd /s /q', command: 'rd /s /q C:\\Users', reason: /rmdir \/s/ },
    { name: 'test_exec_blocks_format_command: format c:', command: 'format c:', reason: /format/ },
    { name: 'format chained after another command', command: 'echo hi; format /dev/sda1', reason: /format/ },
    { name: 'mkfs', command: 'mkfs /dev/sdb1', reason: /mkfs/ },
    { name: 'mkfs.ext4', command: 'mkfs.ext4 /dev/sdb1', reason: /mkfs/ },
    { name: 'diskpart', command: 'diskpart', reason: /diskpart/ },
    { name: 'dd if=', command: 'dd if=/dev/zero of=/dev/sda bs=1M', reason: /dd if=/ },
    { name: '> /dev/sda', command: 'echo x > /dev/sda', reason: /disk device/ },
    { name: '>> /dev/sda', command: 'echo x >> /dev/sda', reason: /disk device/ },
    { name: '> /dev/nvme0n1', command: 'cat img > /dev/nvme0n1', reason: /disk device/ },
    { name: 'shutdown', command: 'shutdown -h now', reason: /shutdown or reboot/ },
    { name: 'reboot', command: 'reboot', reason: /shutdown or reboot/ },
    { name: 'poweroff', command: 'poweroff', reason: /shutdown or reboot/ },
    { name: 'halt', command: 'halt', reason: /shutdown or reboot/ },
    { name: 'systemctl reboot', command: 'systemctl reboot', reason: /shutdown or reboot/ },
    { name: 'init 0', command: 'init 0', reason: /shutdown or reboot/ },
    { name: 'fork bomb', command: ':(){ :|:& };:', reason: /fork bomb/ },
    { name: 'named fork bomb', command: 'bomb(){ bomb|bomb& };bomb', reason: /fork bomb/ },
  ])('blocks $name', expectBlocked);
});

describe('writes to nanobot memory files', () => {
  it.each<Case>([
    { name: 'test_exec_blocks_writes_to_history_jsonl: >', command: 'echo x > memory/history.jsonl', reason: MEMORY },
    { name: '>>', command: 'echo x >> memory/history.jsonl', reason: MEMORY },
    { name: '>|', command: 'echo 1 >| memory/.dream_cursor', reason: MEMORY },
    { name: '&>', command: 'echo 1 &> memory/history.jsonl', reason: MEMORY },
    { name: '> .dream_cursor', command: 'echo 0 > memory/.dream_cursor', reason: MEMORY },
    { name: 'quoted target', command: 'echo x >"memory/history.jsonl"', reason: MEMORY },
    { name: 'tee', command: 'echo x | tee memory/history.jsonl', reason: MEMORY },
    { name: 'tee -a', command: 'echo x | tee -a memory/.dream_cursor', reason: MEMORY },
    { name: 'cp onto it', command: 'cp /tmp/x memory/history.jsonl', reason: MEMORY },
    { name: 'install onto it', command: 'install a memory/history.jsonl', reason: MEMORY },
    { name: 'ln -sf onto it', command: 'ln -sf /dev/null memory/history.jsonl', reason: MEMORY },
    { name: 'mv onto it', command: 'mv a memory/history.jsonl', reason: MEMORY },
    { name: 'mv it away', command: 'mv memory/history.jsonl old.jsonl', reason: MEMORY },
    { name: 'dd of=', command: 'dd if=a of=memory/history.jsonl', reason: /dd if=|history\.jsonl/ },
    { name: 'dd of= alone', command: 'dd of=memory/history.jsonl', reason: MEMORY },
    { name: 'sed -i', command: "sed -i 's/a/b/' memory/history.jsonl", reason: MEMORY },
    { name: 'sed -i.bak', command: "sed -i.bak 's/a/b/' memory/.dream_cursor", reason: MEMORY },
    { name: 'sed --in-place', command: "sed --in-place 's/a/b/' memory/history.jsonl", reason: MEMORY },
    { name: 'perl -pi -e', command: "perl -pi -e 's/a/b/' memory/.dream_cursor", reason: MEMORY },
    { name: 'truncate', command: 'truncate -s 0 memory/history.jsonl', reason: MEMORY },
    { name: 'python open(…, "w")', command: `python3 -c "open('memory/history.jsonl', 'w')"`, reason: MEMORY },
  ])('blocks $name', expectBlocked);
});

describe('chained and wrapped forms of rm -rf', () => {
  it.each<Case>([
    { name: '; chain', command: 'ls; rm -rf build', reason: RECURSIVE },
    { name: '&& chain', command: 'ls && rm -rf build', reason: RECURSIVE },
    { name: '|| chain', command: 'false || rm -rf build', reason: RECURSIVE },
    { name: '| pipe', command: 'echo y | rm -rf build', reason: RECURSIVE },
    { name: '& background', command: 'rm -rf build &', reason: RECURSIVE },
    { name: 'newline', command: 'ls\nrm -rf build', reason: RECURSIVE },
    { name: '$(…) substitution', command: 'echo $(rm -rf build)', reason: RECURSIVE },
    { name: 'backticks', command: 'echo `rm -rf build`', reason: RECURSIVE },
    { name: '<(…) process substitution', command: 'cat <(rm -rf build)', reason: RECURSIVE },
    { name: "sh -c '…'", command: "sh -c 'rm -rf build'", reason: RECURSIVE },
    { name: 'bash -lc "…"', command: 'bash -lc "rm -rf build"', reason: RECURSIVE },
    { name: 'zsh -c', command: "zsh -c 'rm -rf build'", reason: RECURSIVE },
    { name: 'nested sh -c in sh -c', command: `sh -c 'sh -c "rm -rf build"'`, reason: RECURSIVE },
    { name: 'bash here-doc', command: 'bash <<EOF\nrm -rf build\nEOF', reason: RECURSIVE },
    { name: 'bash here-string', command: "bash <<< 'rm -rf build'", reason: RECURSIVE },
    { name: 'script piped into sh', command: 'echo rm -rf build | sh', reason: RECURSIVE },
    { name: 'quoted script piped into sh -s', command: 'echo "rm -rf build" | sh -s', reason: RECURSIVE },
    { name: 'env', command: 'env rm -rf build', reason: RECURSIVE },
    { name: 'env with an assignment', command: 'env FOO=1 rm -rf build', reason: RECURSIVE },
    { name: '/usr/bin/env', command: '/usr/bin/env rm -rf build', reason: RECURSIVE },
    { name: 'env -S', command: "env -S 'rm -rf build'", reason: RECURSIVE },
    { name: 'xargs', command: 'echo build | xargs rm -rf', reason: RECURSIVE },
    { name: 'xargs -I', command: 'xargs -I{} rm -rf {} < list.txt', reason: RECURSIVE },
    { name: 'find -exec', command: 'find . -name x -exec rm -rf {} \\;', reason: RECURSIVE },
    { name: 'find -execdir', command: 'find . -execdir rm -rf {} +', reason: RECURSIVE },
    { name: "eval '…'", command: "eval 'rm -rf build'", reason: RECURSIVE },
    { name: 'eval unquoted', command: 'eval rm -rf build', reason: RECURSIVE },
    { name: 'watch', command: 'watch rm -rf build', reason: RECURSIVE },
    { name: '( … ) subshell', command: '( rm -rf build )', reason: RECURSIVE },
    { name: '{ …; } group', command: '{ rm -rf build; }', reason: RECURSIVE },
    { name: 'if … then', command: 'if true; then rm -rf build; fi', reason: RECURSIVE },
    { name: 'while … do', command: 'while true; do rm -rf build; done', reason: RECURSIVE },
    { name: 'sudo', command: 'sudo rm -rf /', reason: RECURSIVE },
    { name: 'sudo -u root', command: 'sudo -u root rm -rf build', reason: RECURSIVE },
    { name: 'nohup', command: 'nohup rm -rf build', reason: RECURSIVE },
    { name: 'timeout 5', command: 'timeout 5 rm -rf build', reason: RECURSIVE },
    { name: 'nice -n', command: 'nice -n 5 rm -rf build', reason: RECURSIVE },
    { name: 'time', command: 'time rm -rf build', reason: RECURSIVE },
    { name: 'command', command: 'command rm -rf build', reason: RECURSIVE },
    { name: 'exec', command: 'exec rm -rf build', reason: RECURSIVE },
    { name: 'busybox', command: 'busybox rm -rf build', reason: RECURSIVE },
    { name: 'setsid', command: 'setsid rm -rf build', reason: RECURSIVE },
    { name: 'absolute /bin/rm', command: '/bin/rm -rf build', reason: RECURSIVE },
    { name: 'backslash-escaped \\rm', command: '\\rm -rf build', reason: RECURSIVE },
    { name: 'quoted "rm"', command: '"rm" -rf build', reason: RECURSIVE },
    { name: "split quotes r''m", command: "r''m -rf build", reason: RECURSIVE },
    { name: "ANSI-C $'rm'", command: "$'rm' -rf build", reason: RECURSIVE },
  ])('blocks $name', expectBlocked);
});

describe('bypasses users reported', () => {
  it.each<Case>([
    { name: 'a variable holding rm', command: 'X=rm; $X -rf build', reason: RECURSIVE },
    { name: 'a braced variable holding rm', command: 'X=rm; ${X} -rf build', reason: RECURSIVE },
    { name: 'rm spelled from two variables', command: 'a=r; b=m; $a$b -rf build', reason: RECURSIVE },
    { name: 'an exported variable holding the flags', command: 'export F=-rf; rm $F build', reason: RECURSIVE },
    { name: 'a program from a substitution', command: '$(echo rm) -rf build', reason: RECURSIVE },
    {
      name: 'python os.system (#979)',
      command: `python3 -c 'import os; os.system("rm -rf build")'`,
      reason: RECURSIVE,
    },
    { name: 'perl system', command: `perl -e 'system("rm -rf build")'`, reason: RECURSIVE },
    {
      name: 'node child_process',
      command: `node -e 'require("child_process").execSync("rm -rf build")'`,
      reason: RECURSIVE,
    },
  ])('blocks $name', expectBlocked);
});

describe('workspace escapes through exec (restrictToWorkspace)', () => {
  // One layout for the whole block (makeTempDir would remove it after the first test).
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'nanobot-corpus-ws-')));
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
  const workspace = path.join(root, 'ws');
  const home = path.join(root, 'home');
  fs.mkdirSync(path.join(workspace, 'sub'), { recursive: true });
  fs.mkdirSync(path.join(root, 'private'));
  fs.mkdirSync(home);
  fs.symlinkSync(path.join(root, 'private'), path.join(workspace, 'link'));
  const tool = createExecTool({
    policy: createPathPolicy({ workspace, restrictToWorkspace: true, homeDir: home }),
    sandbox: 'none',
    parentEnv: { HOME: home, PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });

  const OUTSIDE = /outside the workspace|path traversal|home directory/;
  it.each<Case & { working_dir?: string }>([
    { name: 'cd ..', command: 'cd .. && ls', reason: /path traversal/ },
    { name: 'cd ../..', command: 'cd ../.. ; cat etc/passwd', reason: /path traversal/ },
    { name: '../ in an argument', command: 'cat ../secret.txt', reason: /path traversal/ },
    { name: '../ in a redirect', command: 'echo x > ../out.txt', reason: /path traversal/ },
    { name: '../ in --opt=', command: 'tool --config=../../x.json', reason: /path traversal/ },
    { name: 'bare cd (goes home)', command: 'cd; ls', reason: /home directory/ },
    { name: 'cd -', command: 'cd -', reason: /home directory/ },
    { name: 'test_exec_guard_blocks_home_path_outside_workspace: ~/', command: 'cat ~/.bashrc', reason: OUTSIDE },
    { name: 'bare ~', command: 'ls ~', reason: OUTSIDE },
    { name: "another user's ~root", command: 'cat ~root/.bashrc', reason: /another user's home/ },
    { name: '$HOME', command: 'cat $HOME/.bashrc', reason: OUTSIDE },
    { name: '${HOME} in quotes', command: `cat "${'$'}{HOME}/.ssh/id_rsa"`, reason: OUTSIDE },
    { name: 'HOME reassigned before ~', command: 'HOME=/etc; cat ~/passwd', reason: OUTSIDE },
    { name: 'a variable holding an outside dir', command: 'D=/etc; cat $D/passwd', reason: OUTSIDE },
    { name: 'absolute /etc/passwd', command: 'cat /etc/passwd', reason: OUTSIDE },
    { name: 'absolute write to /tmp', command: 'echo hi > /tmp/out.txt', reason: OUTSIDE },
    { name: 'absolute path in --opt=', command: 'python3 job.py --output=/etc/cron.d/job', reason: OUTSIDE },
    { name: 'cd /etc', command: 'cd /etc && cat passwd', reason: OUTSIDE },
    { name: 'pushd /', command: 'pushd / && ls', reason: OUTSIDE },
    { name: 'listing a system dir', command: 'ls /usr/bin', reason: OUTSIDE },
    { name: 'same-prefix sibling', command: `cat ${workspace}-evil/x`, reason: OUTSIDE },
    { name: 'symlink out of the workspace', command: 'cat link/secret.txt', reason: /symlink/ },
    {
      name: 'Windows path (quoted, so the backslashes stay)',
      command: "cat 'C:\\Windows\\win.ini'",
      reason: /Windows path/,
    },
    { name: 'path inside $(…)', command: 'echo $(cat /etc/passwd)', reason: OUTSIDE },
    { name: "path inside sh -c '…'", command: "sh -c 'cat /etc/shadow'", reason: OUTSIDE },
    { name: 'path inside a bash here-doc', command: 'bash <<EOF\ncat /etc/shadow\nEOF', reason: OUTSIDE },
    {
      name: 'test_exec_blocks_working_dir_outside_workspace',
      command: 'ls',
      working_dir: root,
      reason: /working_dir rejected: .*outside the workspace/,
    },
    { name: 'working_dir ..', command: 'ls', working_dir: '..', reason: /working_dir rejected/ },
    { name: 'working_dir ~', command: 'ls', working_dir: '~', reason: /working_dir rejected/ },
  ])('blocks $name', async ({ command, working_dir, reason }) => {
    const result = await tool.execute({ command, ...(working_dir ? { working_dir } : {}) }, makeContext());
    expect(result.isError, `not blocked: ${command}`).toBe(true);
    expect(textOf(result)).toMatch(/^Error: (Command blocked by safety guard|working_dir rejected)/);
    expect(textOf(result)).toMatch(reason);
  });
});
