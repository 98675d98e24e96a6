import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { policyCheck } from '../../src/security/checked-open.js';
import {
  closeDir,
  copyCheckedFile,
  openCheckedDirectory,
  openChildDirectory,
  openChildFile,
} from '../../src/security/checked-read.js';
import { createPathPolicy } from '../../src/security/workspace.js';
import { WorkspaceEscapeError, WorkspaceFileTypeError } from '../../src/security/workspace-fs.js';
import { makeTempDir } from '../tools/helpers.js';

function setup() {
  const base = makeTempDir('checked-read-');
  const ws = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  fs.mkdirSync(path.join(ws, 'dir'), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(ws, 'dir', 'a.txt'), 'inside');
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'SECRET');
  fs.symlinkSync(outside, path.join(ws, 'dir', 'out'));
  fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(ws, 'dir', 'secret-link'));
  const check = policyCheck(createPathPolicy({ workspace: ws, restrictToWorkspace: true }), 'read');
  return { base, ws, outside, check };
}

describe('checked reads for the file tools', () => {
  it('keeps a checked directory open after the check, and refuses one whose real path is not allowed', () => {
    const { ws, outside, check } = setup();
    const dir = openCheckedDirectory(path.join(ws, 'dir'), check);
    try {
      expect(dir.real).toBe(path.join(ws, 'dir'));
      // Renaming the path away changes nothing for the opened anchor.
      fs.renameSync(path.join(ws, 'dir'), path.join(ws, 'moved'));
      expect(fs.readdirSync(dir.anchor)).toContain('a.txt');
    } finally {
      closeDir(dir);
    }
    expect(() => openCheckedDirectory(path.join(ws, 'moved', 'out'), check)).toThrow(WorkspaceEscapeError);
    expect(() => openCheckedDirectory(outside, check)).toThrow(/outside the workspace/);
    expect(() => openCheckedDirectory(path.join(ws, 'moved', 'a.txt'), check)).toThrow(WorkspaceFileTypeError);
  });

  it('opens children of an opened directory without ever following a link', () => {
    const { ws, check } = setup();
    execFileSync('mkfifo', [path.join(ws, 'dir', 'fifo')]);
    const root = openCheckedDirectory(ws, check);
    const dir = openChildDirectory(root, 'dir', root);
    try {
      const file = openChildFile(dir, 'a.txt');
      expect(fs.readFileSync(file.fd, 'utf8')).toBe('inside');
      fs.closeSync(file.fd);
      // O_NOFOLLOW | O_DIRECTORY on a link fails (ENOTDIR on Linux): refused, never followed.
      expect(() => openChildDirectory(dir, 'out', root)).toThrow(/ENOTDIR|link/);
      expect(() => openChildDirectory(dir, 'a.txt', root)).toThrow(/ENOTDIR/);
      expect(() => openChildFile(dir, 'secret-link')).toThrow(WorkspaceEscapeError);
      expect(() => openChildFile(dir, 'out')).toThrow(WorkspaceEscapeError);
      // A FIFO is refused at once (O_NONBLOCK), not waited on.
      expect(() => openChildFile(dir, 'fifo')).toThrow(WorkspaceFileTypeError);
    } finally {
      closeDir(dir);
      closeDir(root);
    }
  });

  it('copies a checked file under its own name into a private directory, and refuses a link out', async () => {
    const { base, ws, check } = setup();
    const media = path.join(base, 'media', 'outbound');
    const copy = await copyCheckedFile(path.join(ws, 'dir', 'a.txt'), check, media, 1234);
    expect(path.basename(copy)).toBe('a.txt');
    expect(path.dirname(path.dirname(copy))).toBe(media);
    expect(path.basename(path.dirname(copy))).toMatch(/^1234-[0-9a-f]{12}$/);
    expect(fs.readFileSync(copy, 'utf8')).toBe('inside');
    expect(fs.statSync(copy).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(copy)).mode & 0o777).toBe(0o700);
    await expect(copyCheckedFile(path.join(ws, 'dir', 'secret-link'), check, media)).rejects.toThrow(
      /outside the workspace/,
    );
    expect(fs.readdirSync(media)).toHaveLength(1);
  });
});
