import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  openCheckedFile,
  policyCheck,
  readCheckedFile,
  withCheckedDirectory,
} from '../../src/security/checked-open.js';
import { createPathPolicy } from '../../src/security/workspace.js';
import {
  WorkspaceEscapeError,
  WorkspaceFileTypeError,
  WorkspaceFs,
  workspaceFs,
} from '../../src/security/workspace-fs.js';
import { useFdAnchorsForTests } from '../../src/security/workspace-resolve.js';

let base: string;
let ws: string;
let outside: string;
let secret: string;
let wfs: WorkspaceFs;

/** Every file outside the workspace with its bytes and mode, to prove nothing there changed. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[p] = `${fs.lstatSync(p).mode}:${e.isSymbolicLink() ? fs.readlinkSync(p) : fs.readFileSync(p, 'utf8')}`;
    }
  };
  walk(dir);
  return out;
}

beforeEach(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wsfs-')));
  ws = path.join(base, 'workspace');
  outside = path.join(base, 'outside');
  fs.mkdirSync(ws);
  fs.mkdirSync(outside);
  secret = path.join(outside, 'config.json');
  fs.writeFileSync(secret, '{"apiKey":"sk-SECRET"}');
  fs.writeFileSync(path.join(outside, 'old.txt'), 'old');
  wfs = workspaceFs(ws);
});
afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

const link = (target: string, at: string): void => {
  fs.mkdirSync(path.dirname(path.join(ws, at)), { recursive: true });
  fs.symlinkSync(target, path.join(ws, at));
};

describe('reads never follow a link out of the workspace', () => {
  const spellings: Array<[string, (ws: string, name: string) => string]> = [
    ['absolute link', () => secret],
    ['relative ../ link', (w, name) => path.relative(path.dirname(path.join(w, name)), secret)],
    ['deep relative ../../ link', () => `../../../../../../../..${secret}`],
    ['link through /proc/self/root', () => `/proc/self/root${secret}`],
    ['link to /dev/zero', () => '/dev/zero'],
    ['dangling absolute link', () => path.join(outside, 'missing.json')],
    ['link to the workspace root path spelled via ..', (w) => `${w}/../outside/config.json`],
  ];
  for (const name of ['SOUL.md', 'memory/MEMORY.md', 'prompts/x.md', 'a b/ünï ćode.md', '.hidden', 'SOUL.md\u200b']) {
    for (const [label, target] of spellings) {
      it(`${name}: ${label}`, () => {
        link(target(ws, name), name);
        expect(() => wfs.readTextSync(name)).toThrow(WorkspaceEscapeError);
        expect(() => wfs.readTextIfExistsSync(name)).toThrow(/outside the workspace|leaves the workspace/);
        expect(wfs.isFileSync(name)).toBe(false);
      });
    }
  }

  it('names the path and where it leads in the error', () => {
    link('../outside/config.json', 'USER.md');
    expect(() => wfs.readTextSync('USER.md')).toThrow(`it resolves to ${secret}, outside the workspace`);
    link(secret, 'SOUL.md');
    expect(() => wfs.readTextSync('SOUL.md')).toThrow(
      `refusing ${path.join(ws, 'SOUL.md')}: it resolves to ${secret}, outside the workspace`,
    );
  });

  it('refuses a symlinked parent directory, a chain of links, and .. climbing out', () => {
    link(outside, 'memory');
    expect(() => wfs.readTextSync('memory/config.json')).toThrow(WorkspaceEscapeError);
    link(secret, 'c3');
    link('c3', 'c2');
    link('./c2', 'c1');
    expect(() => wfs.readTextSync('c1')).toThrow(WorkspaceEscapeError);
    fs.mkdirSync(path.join(ws, 'x'));
    for (const p of ['../outside/config.json', 'x/../../outside/config.json', secret, `${ws}/../outside/config.json`]) {
      expect(() => wfs.readTextSync(p)).toThrow(WorkspaceEscapeError);
    }
    link('c1', 'loop-a');
    fs.unlinkSync(path.join(ws, 'c3'));
    link('loop-a', 'c3');
    expect(() => wfs.readTextSync('c1')).toThrow(/too many levels/);
  });

  it('follows links that stay inside, and odd but inside spellings', () => {
    fs.mkdirSync(path.join(ws, 'real'));
    fs.writeFileSync(path.join(ws, 'real', 'f.md'), 'inside');
    link('real/f.md', 'l1');
    link(path.join(ws, 'l1'), 'l2');
    link('real', 'dirlink');
    link('../real/f.md', 'sub/up');
    for (const p of [
      'l1',
      'l2',
      'dirlink/f.md',
      'sub/up',
      './real//f.md',
      'real/../real/f.md',
      path.join(ws, 'real/f.md'),
    ]) {
      expect(wfs.readTextSync(p)).toBe('inside');
    }
    expect(wfs.readTextIfExistsSync('nope/none.md')).toBeUndefined();
  });

  it('refuses a FIFO without hanging, and files above maxBytes', () => {
    execFileSync('mkfifo', [path.join(ws, 'SOUL.md')]);
    expect(() => wfs.readTextSync('SOUL.md')).toThrow(WorkspaceFileTypeError);
    expect(() => wfs.readTextSync('SOUL.md')).toThrow(/FIFO/);
    expect(() => wfs.appendFileSync('SOUL.md', 'x')).toThrow(WorkspaceFileTypeError);
    fs.writeFileSync(path.join(ws, 'big.md'), 'x'.repeat(100));
    expect(() => wfs.readTextSync('big.md', { maxBytes: 10 })).toThrow(/at most 10 bytes/);
    fs.mkdirSync(path.join(ws, 'dir.md'));
    expect(() => wfs.readTextSync('dir.md')).toThrow(WorkspaceFileTypeError);
  });
});

describe('writes, appends, deletes and renames stay inside', () => {
  it('append to a link out (absolute, relative, dangling, via parent) refuses and changes nothing outside', () => {
    const before = snapshot(outside);
    link(secret, 'memory/history.jsonl');
    link('../../outside/old.txt', 'memory/.cursor');
    link(path.join(outside, 'new.txt'), 'memory/.dream_cursor');
    link(outside, 'cron');
    for (const p of ['memory/history.jsonl', 'memory/.cursor', 'memory/.dream_cursor', 'cron/jobs.json']) {
      expect(() => wfs.appendFileSync(p, 'line\n')).toThrow(WorkspaceEscapeError);
    }
    expect(() => wfs.writeFileAtomicSync('cron/jobs.json', '{}')).toThrow(WorkspaceEscapeError);
    expect(() => wfs.mkdirSync('cron/sub')).toThrow(WorkspaceEscapeError);
    expect(snapshot(outside)).toEqual(before);
  });

  it('atomic write replaces a planted link with a file (never writes through it)', () => {
    const before = snapshot(outside);
    link(secret, 'memory/MEMORY.md');
    link(path.join(outside, 'new.txt'), 'USER.md');
    wfs.writeFileAtomicSync('memory/MEMORY.md', 'mine', { mode: 0o600 });
    wfs.writeFileAtomicSync('USER.md', 'mine too');
    expect(fs.lstatSync(path.join(ws, 'memory/MEMORY.md')).isFile()).toBe(true);
    expect(fs.lstatSync(path.join(ws, 'memory/MEMORY.md')).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(path.join(ws, 'USER.md'), 'utf8')).toBe('mine too');
    expect(snapshot(outside)).toEqual(before);
  });

  it('creates files and directories with the modes asked for', () => {
    wfs.appendFileSync('memory/history.jsonl', '{"a":1}\n', { mode: 0o600, dirMode: 0o700 });
    wfs.appendFileSync('memory/history.jsonl', '{"a":2}\n', { mode: 0o600, dirMode: 0o700 });
    expect(fs.readFileSync(path.join(ws, 'memory/history.jsonl'), 'utf8')).toBe('{"a":1}\n{"a":2}\n');
    expect(fs.statSync(path.join(ws, 'memory/history.jsonl')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(ws, 'memory')).mode & 0o777).toBe(0o700);
    wfs.writeFileAtomicSync('a/b/c.txt', 'x', { mode: 0o640, dirMode: 0o700 });
    expect(fs.statSync(path.join(ws, 'a/b')).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(ws, 'a/b/c.txt')).mode & 0o777).toBe(0o640);
    expect(fs.readdirSync(path.join(ws, 'a/b'))).toEqual(['c.txt']);
  });

  it('a short append truncates back and throws instead of reporting success', () => {
    fs.writeFileSync(path.join(ws, 'h.jsonl'), 'one\n');
    const short = new WorkspaceFs(ws, {
      writeSync: (fd, data, offset, length) => fs.writeSync(fd, data, offset, Math.min(length, 3)) && 0,
    });
    expect(() => short.appendFileSync('h.jsonl', 'two two two\n')).toThrow(/short write/);
    expect(fs.readFileSync(path.join(ws, 'h.jsonl'), 'utf8')).toBe('one\n');
    const half = new WorkspaceFs(ws, {
      writeSync: (fd, data, offset, length) => {
        if (offset > 0) throw Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' });
        return fs.writeSync(fd, data, offset, Math.min(length, 4));
      },
    });
    expect(() => half.appendFileSync('h.jsonl', 'two two two\n')).toThrow(/ENOSPC/);
    expect(fs.readFileSync(path.join(ws, 'h.jsonl'), 'utf8')).toBe('one\n');
    expect(() => short.writeFileAtomicSync('h.jsonl', 'replaced')).toThrow(/short write/);
    expect(fs.readFileSync(path.join(ws, 'h.jsonl'), 'utf8')).toBe('one\n');
    expect(fs.readdirSync(ws)).toEqual(['h.jsonl']);
  });

  it('unlink and rm remove links, never what they point at', () => {
    const before = snapshot(outside);
    link(secret, 'triggers/t1.json');
    link(outside, 'triggers/dir');
    link(outside, '.nanobot/tool-results');
    wfs.unlinkSync('triggers/t1.json');
    wfs.rmSync('triggers');
    wfs.rmSync('.nanobot/tool-results');
    expect(fs.existsSync(path.join(ws, 'triggers'))).toBe(false);
    expect(snapshot(outside)).toEqual(before);
    expect(() => wfs.readdirSync('.nanobot/tool-results')).toThrow();
  });

  it('readdir refuses a directory link out and reports links as links', () => {
    link(outside, 'triggers');
    expect(() => wfs.readdirSync('triggers')).toThrow(WorkspaceEscapeError);
    expect(() => wfs.readdirIfExistsSync('triggers')).toThrow(WorkspaceEscapeError);
    link(secret, 'skills/x');
    expect(wfs.readdirSync('skills')).toEqual([{ name: 'x', kind: 'symlink' }]);
    expect(wfs.readdirIfExistsSync('nothing')).toEqual([]);
  });

  it('rename moves entries inside and refuses a destination parent that is a link out', () => {
    wfs.writeFileAtomicSync('triggers/a.json', '{}');
    wfs.renameSync('triggers/a.json', 'triggers/done/a.json');
    expect(wfs.readTextSync('triggers/done/a.json')).toBe('{}');
    link(outside, 'out');
    expect(() => wfs.renameSync('triggers/done/a.json', 'out/a.json')).toThrow(WorkspaceEscapeError);
    expect(fs.existsSync(path.join(outside, 'a.json'))).toBe(false);
  });
});

describe('a directory swapped for a link mid-operation', () => {
  it('operations inside a held directory anchor stay in the directory that was opened', () => {
    fs.mkdirSync(path.join(ws, 'memory'));
    wfs.withDirectorySync('memory', (dir) => {
      fs.renameSync(path.join(ws, 'memory'), path.join(ws, 'memory-moved'));
      fs.symlinkSync(outside, path.join(ws, 'memory'));
      fs.writeFileSync(`${dir.anchor}/x`, 'anchored');
    });
    expect(fs.readFileSync(path.join(ws, 'memory-moved', 'x'), 'utf8')).toBe('anchored');
    expect(fs.existsSync(path.join(outside, 'x'))).toBe(false);
    // The next call sees the link and refuses.
    expect(() => wfs.appendFileSync('memory/history.jsonl', 'x\n')).toThrow(WorkspaceEscapeError);
  });

  it('a file swapped for a link between calls is refused on the next call', () => {
    wfs.writeFileAtomicSync('SOUL.md', 'soul');
    expect(wfs.readTextSync('SOUL.md')).toBe('soul');
    fs.unlinkSync(path.join(ws, 'SOUL.md'));
    fs.symlinkSync(secret, path.join(ws, 'SOUL.md'));
    expect(() => wfs.readTextSync('SOUL.md')).toThrow(WorkspaceEscapeError);
  });
});

describe('open, then check the real path (for policy-checked tools)', () => {
  it('refuses what the policy refuses after opening, and FIFOs without hanging', () => {
    const policy = createPathPolicy({ workspace: ws, restrictToWorkspace: true });
    fs.writeFileSync(path.join(ws, 'ok.txt'), 'ok');
    expect(readCheckedFile(path.join(ws, 'ok.txt'), policyCheck(policy, 'read')).toString()).toBe('ok');
    link(secret, 'evil.txt');
    expect(() => openCheckedFile(path.join(ws, 'evil.txt'), policyCheck(policy, 'read'))).toThrow(
      /outside the workspace/,
    );
    execFileSync('mkfifo', [path.join(ws, 'fifo')]);
    expect(() => openCheckedFile(path.join(ws, 'fifo'), policyCheck(policy, 'read'))).toThrow(WorkspaceFileTypeError);
    link(outside, 'dir');
    expect(() => withCheckedDirectory(path.join(ws, 'dir'), policyCheck(policy, 'read'), () => 1)).toThrow(
      /outside the workspace/,
    );
    expect(withCheckedDirectory(ws, policyCheck(policy, 'read'), (d) => fs.readdirSync(d.anchor).length)).toBe(4);
  });
});

// Without /proc/self/fd (macOS, BSD) the layer anchors on verified real paths: the same attacks are refused, only
// a swap in the middle of one operation is not (documented: the window is narrowed, not closed).
describe('the real-path fallback (no /proc/self/fd) refuses the same links', () => {
  beforeEach(() => useFdAnchorsForTests(false));
  afterEach(() => useFdAnchorsForTests(undefined));

  it('reads, appends, writes, listings and deletes', () => {
    const before = snapshot(outside);
    link(secret, 'SOUL.md');
    link('../outside/config.json', 'USER.md');
    link(outside, 'memory');
    link(outside, 'triggers');
    for (const p of ['SOUL.md', 'USER.md', 'memory/config.json'])
      expect(() => wfs.readTextSync(p)).toThrow(WorkspaceEscapeError);
    expect(() => wfs.appendFileSync('memory/history.jsonl', 'x\n')).toThrow(WorkspaceEscapeError);
    expect(() => wfs.writeFileAtomicSync('memory/MEMORY.md', 'x')).toThrow(WorkspaceEscapeError);
    expect(() => wfs.readdirSync('triggers')).toThrow(WorkspaceEscapeError);
    wfs.rmSync('triggers');
    wfs.writeFileAtomicSync('ok/file.txt', 'inside', { mode: 0o600 });
    expect(wfs.readTextSync('ok/file.txt')).toBe('inside');
    execFileSync('mkfifo', [path.join(ws, 'fifo')]);
    expect(() => wfs.readTextSync('fifo')).toThrow(WorkspaceFileTypeError);
    expect(snapshot(outside)).toEqual(before);
  });
});
