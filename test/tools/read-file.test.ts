import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ContentPart } from '../../src/providers/types.js';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createReadFileTool } from '../../src/tools/filesystem/read-file.js';
import { makeContext, makeTempDir, textOf } from './helpers.js';

// A 1x1 transparent PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
);

function setup(restrictToWorkspace = true) {
  const workspace = makeTempDir();
  const policy = createPathPolicy({ workspace, restrictToWorkspace });
  const tool = createReadFileTool({ policy });
  const write = (name: string, content: string | Buffer) => {
    fs.mkdirSync(path.dirname(path.join(workspace, name)), { recursive: true });
    fs.writeFileSync(path.join(workspace, name), content);
  };
  return { workspace, tool, write };
}

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n');

describe('read_file', () => {
  it('prints numbered lines and the end-of-file marker', async () => {
    const { tool, write } = setup();
    write('notes.txt', 'line 1\nline 2\nline 3\n');
    const result = await tool.execute({ path: 'notes.txt' }, makeContext());
    expect(result.isError).toBeFalsy();
    expect(result.content).toBe('1| line 1\n2| line 2\n3| line 3\n\n(End of file — 3 lines total)');
  });

  it('pages with offset and limit and says where to continue', async () => {
    const { tool, write } = setup();
    write('long.txt', lines(10));
    const text = textOf(await tool.execute({ path: 'long.txt', offset: 4, limit: 3 }, makeContext()));
    expect(text).toBe('4| line 4\n5| line 5\n6| line 6\n\n(Showing lines 4–6 of 10. Use offset=7 to continue.)');
  });

  it('defaults to 2000 lines', async () => {
    const { tool, write } = setup();
    write('huge.txt', lines(2500));
    const text = textOf(await tool.execute({ path: 'huge.txt' }, makeContext()));
    expect(text).toContain('2000| line 2000');
    expect(text).not.toContain('2001| line 2001');
    expect(text).toContain('Use offset=2001 to continue');
  });

  it('caps output at 128k characters', async () => {
    const { tool, write } = setup();
    write('wide.txt', Array.from({ length: 1000 }, () => 'x'.repeat(500)).join('\n'));
    const text = textOf(await tool.execute({ path: 'wide.txt' }, makeContext()));
    expect(text.length).toBeLessThanOrEqual(128_200);
    expect(text).toMatch(/Use offset=\d+ to continue/);
  });

  it('reports an offset past the end as an error', async () => {
    const { tool, write } = setup();
    write('short.txt', 'a\nb\n');
    const result = await tool.execute({ path: 'short.txt', offset: 9 }, makeContext());
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/beyond the end of the file \(2 lines total\)/);
  });

  it('returns a stub when the same unchanged file is read again, unless forced', async () => {
    const { tool, write } = setup();
    write('notes.txt', 'hello\n');
    const ctx = makeContext({ sessionKey: 'cli:direct' });
    expect(textOf(await tool.execute({ path: 'notes.txt' }, ctx))).toContain('1| hello');
    expect(await tool.execute({ path: 'notes.txt' }, ctx)).toEqual({
      content: '[File unchanged since last read: notes.txt]',
    });
    expect(textOf(await tool.execute({ path: 'notes.txt', force: true }, ctx))).toContain('1| hello');
  });

  it('reads again after the file changes, or with a different window, or in another session', async () => {
    const { tool, write } = setup();
    write('notes.txt', 'hello\n');
    const ctx = makeContext({ sessionKey: 'telegram:1' });
    await tool.execute({ path: 'notes.txt' }, ctx);
    write('notes.txt', 'hallo\n'); // same size: the fingerprint must still change
    expect(textOf(await tool.execute({ path: 'notes.txt' }, ctx))).toContain('1| hallo');
    expect(textOf(await tool.execute({ path: 'notes.txt', offset: 1, limit: 1 }, ctx))).toContain('1| hallo');
    const other = makeContext({ sessionKey: 'discord:2' });
    expect(textOf(await tool.execute({ path: 'notes.txt' }, other))).toContain('1| hallo');
  });

  it('returns images as a text part plus a data URL', async () => {
    const { tool, write } = setup();
    write('pics/dot.png', PNG);
    const result = await tool.execute({ path: 'pics/dot.png' }, makeContext());
    expect(Array.isArray(result.content)).toBe(true);
    const [label, image] = result.content as ContentPart[];
    expect(label).toMatchObject({ type: 'text' });
    expect(label?.type === 'text' && label.text).toContain('pics/dot.png');
    expect(image).toEqual({ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } });
  });

  it('rejects binary files that are not images', async () => {
    const { tool, write } = setup();
    write('app.bin', Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 0, 1, 2, 3]));
    const result = await tool.execute({ path: 'app.bin' }, makeContext());
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/binary file/);
  });

  it('rejects files over 100 MiB', async () => {
    const { tool, workspace } = setup();
    const big = path.join(workspace, 'big.log');
    fs.writeFileSync(big, '');
    fs.truncateSync(big, 100 * 1024 * 1024 + 1); // sparse: no real disk use
    const result = await tool.execute({ path: 'big.log' }, makeContext());
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/100 MiB/);
  });

  it('explains missing files, directories and paths outside the workspace', async () => {
    const { tool, write } = setup();
    write('dir/a.txt', 'a');
    expect(textOf(await tool.execute({ path: 'nope.txt' }, makeContext()))).toMatch(/File not found: nope.txt/);
    expect(textOf(await tool.execute({ path: 'dir' }, makeContext()))).toMatch(/is a directory.*list_dir/);
    const outside = await tool.execute({ path: '/etc/hostname' }, makeContext());
    expect(outside.isError).toBe(true);
    expect(textOf(outside)).toMatch(/outside the workspace/);
  });

  it('blocks /dev even when unrestricted', async () => {
    const { tool } = setup(false);
    const result = await tool.execute({ path: '/dev/zero' }, makeContext());
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/blocked/);
  });

  it('handles empty files and CRLF line endings', async () => {
    const { tool, write } = setup();
    write('empty.txt', '');
    write('dos.txt', 'one\r\ntwo\r\n');
    expect(textOf(await tool.execute({ path: 'empty.txt' }, makeContext()))).toBe('(Empty file)');
    expect(textOf(await tool.execute({ path: 'dos.txt' }, makeContext()))).toBe(
      '1| one\n2| two\n\n(End of file — 2 lines total)',
    );
  });
});
