import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPathPolicy } from '../../src/security/workspace.js';
import { readPdf } from '../../src/tools/documents/pdf.js';
import { createReadFileTool, MAX_READ_CHARS } from '../../src/tools/filesystem/read-file.js';
import { makeDocx, makePdf, makePptx, makeXlsx, makeZip } from '../helpers/documents.js';
import { makeContext, makeTempDir, textOf } from './helpers.js';

function setup(restrictToWorkspace = true) {
  const workspace = makeTempDir();
  const policy = createPathPolicy({ workspace, restrictToWorkspace });
  const tool = createReadFileTool({ policy });
  const write = (name: string, content: string | Buffer) => {
    fs.mkdirSync(path.dirname(path.join(workspace, name)), { recursive: true });
    fs.writeFileSync(path.join(workspace, name), content);
  };
  const read = (args: { path: string; pages?: string; force?: boolean }) => tool.execute(args, makeContext());
  return { workspace, tool, write, read };
}

describe('read_file on a PDF', () => {
  const twoPages = makePdf([
    ['Quarterly report', 'Revenue grew (a lot)'],
    ['Second page text', 'The end'],
  ]);

  it('returns the text of every page under upstream page markers', async () => {
    const { write, read } = setup();
    write('report.pdf', twoPages);
    const result = await read({ path: 'report.pdf' });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe(
      '--- Page 1 ---\nQuarterly report\nRevenue grew (a lot)\n\n--- Page 2 ---\nSecond page text\nThe end',
    );
  });

  it('pages: "2" returns page two only, and a range is clamped to the last page', async () => {
    const { write, read } = setup();
    write('report.pdf', twoPages);
    expect(textOf(await read({ path: 'report.pdf', pages: '2' }))).toBe('--- Page 2 ---\nSecond page text\nThe end');
    expect(textOf(await read({ path: 'report.pdf', pages: '1-9' }))).toContain('--- Page 2 ---');
  });

  it('refuses a page range it cannot use, naming the format', async () => {
    const { write, read } = setup();
    write('report.pdf', twoPages);
    for (const pages of ['3', '2-1', '0', 'first', '1-2-3']) {
      const result = await read({ path: 'report.pdf', pages });
      expect(result.isError, pages).toBe(true);
      expect(textOf(result)).toContain(`Invalid page range '${pages}'`);
    }
  });

  it('returns at most 20 pages and names the next range', async () => {
    const { write, read } = setup();
    write('long.pdf', makePdf(Array.from({ length: 45 }, (_, i) => [`This is page ${i + 1}`])));
    const first = textOf(await read({ path: 'long.pdf' }));
    expect(first).toContain('--- Page 20 ---\nThis is page 20');
    expect(first).not.toContain('--- Page 21 ---');
    expect(first).toMatch(/\(Showing pages 1-20 of 45\. Use pages='21-40' to continue\.\)$/);
    const last = textOf(await read({ path: 'long.pdf', pages: '41-45' }));
    expect(last.startsWith('--- Page 41 ---')).toBe(true);
    expect(last).toMatch(/This is page 45$/);
  });

  it('stops at the character cap inside a page range and names where to go on', async () => {
    const pdf = await readPdf(makePdf(Array.from({ length: 6 }, (_, i) => [`Page ${i + 1} `.padEnd(60, '.')])), {
      maxPages: 20,
      maxChars: 200,
    });
    expect(pdf).toMatchObject({ truncated: true, totalPages: 6, start: 1, end: 3 });
    expect(pdf.text).toMatch(/^--- Page 1 ---\nPage 1 \.+\n\n--- Page 2 ---\nPage 2 \.+\n\n--- Page 3 ---\nPa/);
    expect(pdf.text).toMatch(/… \(truncated at 200 characters\)$/);
  });

  it('leaves the caller’s buffer usable (PDF.js detaches what it is given)', async () => {
    const bytes = Buffer.from(twoPages);
    await readPdf(bytes, { maxPages: 20, maxChars: 1000 });
    expect(bytes.equals(twoPages)).toBe(true);
    expect((await readPdf(bytes, { maxPages: 20, maxChars: 1000 })).totalPages).toBe(2);
  });

  it('gives a corrupt PDF an error result', async () => {
    const { write, read } = setup();
    write('broken.pdf', Buffer.from('%PDF-1.4\nthis is not really a PDF\n'));
    write('cut.pdf', twoPages.subarray(0, 200));
    for (const name of ['broken.pdf', 'cut.pdf']) {
      const result = await read({ path: name });
      expect(result.isError, name).toBe(true);
      expect(textOf(result)).toMatch(new RegExp(`^Error: Cannot read ${name}: (not a valid PDF|the PDF could not)`));
    }
  });

  it('reads the pages it can when one page is broken', async () => {
    const { write, read } = setup();
    const broken = twoPages.toString('latin1').replace('/Kids [4 0 R 6 0 R]', '/Kids [4 0 R 99 0 R]');
    write('half.pdf', Buffer.from(broken, 'latin1'));
    const result = await read({ path: 'half.pdf' });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toMatch(
      /^--- Page 1 ---\nQuarterly report\nRevenue grew \(a lot\)\n\n--- Page 2 ---\n\(this page could not be read: .+\)$/,
    );
  });

  it('says an encrypted PDF is encrypted', async () => {
    const { write, read } = setup();
    write('secret.pdf', makePdf([['Top secret']], { userPassword: 'hunter2' }));
    const result = await read({ path: 'secret.pdf' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      'Error: Cannot read secret.pdf: the PDF is encrypted (password-protected); nanobot cannot open it.',
    );
  });

  it('says when a PDF has no text to extract', async () => {
    const { write, read } = setup();
    write('blank.pdf', makePdf([[], []]));
    expect(textOf(await read({ path: 'blank.pdf' }))).toContain('(PDF has no extractable text: blank.pdf.');
  });

  it('answers a repeated read with the unchanged stub, but not a read of other pages', async () => {
    const { write, read } = setup();
    write('report.pdf', twoPages);
    await read({ path: 'report.pdf', pages: '1' });
    expect(textOf(await read({ path: 'report.pdf', pages: '1' }))).toBe('[File unchanged since last read: report.pdf]');
    expect(textOf(await read({ path: 'report.pdf', pages: '2' }))).toContain('Second page text');
  });

  it('keeps the workspace boundary for documents too', async () => {
    const { workspace, read } = setup();
    const outside = makeTempDir();
    fs.writeFileSync(path.join(outside, 'elsewhere.pdf'), twoPages);
    fs.symlinkSync(path.join(outside, 'elsewhere.pdf'), path.join(workspace, 'link.pdf'));
    for (const target of [path.join(outside, 'elsewhere.pdf'), 'link.pdf', '../elsewhere.pdf']) {
      const result = await read({ path: target });
      expect(result.isError, target).toBe(true);
      expect(textOf(result), target).not.toContain('Quarterly');
    }
  });
});

describe('read_file on Office documents', () => {
  it('reads a DOCX: paragraphs, headings, and its table as a Markdown table', async () => {
    const { write, read } = setup();
    write(
      'plan.docx',
      makeDocx([
        { heading: 'Project plan' },
        'We ship in <March> & April.',
        {
          table: [
            ['Task', 'Owner'],
            ['Design', 'Ana'],
            ['Build | test', 'Bo\nand Cy'],
          ],
        },
        'Questions go to the team.',
      ]),
    );
    const result = await read({ path: 'plan.docx' });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe(
      [
        '# Project plan',
        '',
        'We ship in <March> & April.',
        '',
        '| Task | Owner |',
        '| --- | --- |',
        '| Design | Ana |',
        '| Build \\| test | Bo<br>and Cy |',
        '',
        'Questions go to the team.',
      ].join('\n'),
    );
  });

  it('reads each sheet of an XLSX as a table under its name', async () => {
    const { write, read } = setup();
    write(
      'budget.xlsx',
      makeXlsx({
        Costs: [['Item', 'Amount', 'Paid'], ['Rent', 1200, true], [], ['Food', 310.5, false]],
        Dates: [
          ['Event', 'When'],
          ['Launch', new Date(Date.UTC(2026, 2, 14))],
          ['Sparse', null, 'far right'],
        ],
      }),
    );
    const result = await read({ path: 'budget.xlsx' });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe(
      [
        '--- Sheet: Costs ---',
        '| Item | Amount | Paid |',
        '| --- | --- | --- |',
        '| Rent | 1200 | TRUE |',
        '| Food | 310.5 | FALSE |',
        '',
        '--- Sheet: Dates ---',
        '| Event | When |  |',
        '| --- | --- | --- |',
        '| Launch | 2026-03-14 |  |',
        '| Sparse |  | far right |',
      ].join('\n'),
    );
  });

  it('reads a PPTX slide by slide, numbered', async () => {
    const { write, read } = setup();
    write(
      'deck.pptx',
      makePptx([
        ['Welcome', 'nanobot in five minutes'],
        ['Second slide', 'Questions?'],
      ]),
    );
    const result = await read({ path: 'deck.pptx' });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe(
      '--- Slide 1 ---\nWelcome\nnanobot in five minutes\n\n--- Slide 2 ---\nSecond slide\nQuestions?',
    );
  });

  it('gives a corrupt or encrypted Office file an error result', async () => {
    const { write, read } = setup();
    write('junk.docx', Buffer.from('not a zip at all'));
    write('half.xlsx', makeXlsx({ A: [['x']] }).subarray(0, 300));
    write('locked.pptx', makeZip({ 'ppt/presentation.xml': '<x/>' }, { encryptedFlag: true }));
    // A password-protected Office file is an OLE compound file holding an "EncryptedPackage" stream.
    const ole = Buffer.alloc(4096);
    Buffer.from('d0cf11e0a1b11ae1', 'hex').copy(ole);
    Buffer.from('EncryptedPackage', 'utf16le').copy(ole, 1024);
    write('protected.docx', ole);
    write('legacy.xlsx', Buffer.concat([Buffer.from('d0cf11e0a1b11ae1', 'hex'), Buffer.alloc(600)]));
    write('empty.docx', makeZip({ 'other.xml': '<x/>' }));
    const expected: Record<string, RegExp> = {
      'junk.docx': /not a valid DOCX file \(no zip directory\)/,
      'half.xlsx': /not a valid XLSX file/,
      'locked.pptx': /the PPTX file is encrypted/,
      'protected.docx': /the DOCX file is encrypted \(password-protected\)/,
      'legacy.xlsx': /old binary Office file/,
      'empty.docx': /it has no document part/,
    };
    for (const [name, pattern] of Object.entries(expected)) {
      const result = await read({ path: name });
      expect(result.isError, name).toBe(true);
      expect(textOf(result), name).toMatch(pattern);
    }
  });

  it('caps a long document at the read_file character limit', async () => {
    const { write, read } = setup();
    write('long.docx', makeDocx(Array.from({ length: 2000 }, (_, i) => `Paragraph ${i + 1} `.padEnd(100, 'z'))));
    const text = textOf(await read({ path: 'long.docx' }));
    expect(text.length).toBeLessThanOrEqual(MAX_READ_CHARS + 200);
    expect(text).toContain('Paragraph 1200 ');
    expect(text).not.toContain('Paragraph 1999 ');
    expect(text).toMatch(/\(truncated at 128000 characters\)\n\n\(Document text truncated at ~128K characters\.\)$/);
  });

  it('refuses a zip whose part inflates beyond what its directory declares', async () => {
    const { write, read } = setup();
    const honest = makeDocx(['a'.repeat(5000)]);
    // Lower the declared size of word/document.xml in the central directory: inflating must stop there.
    const central = honest.lastIndexOf(Buffer.from('word/document.xml')) - 46;
    honest.writeUInt32LE(100, central + 24);
    write('bomb.docx', honest);
    const result = await read({ path: 'bomb.docx' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('damaged entry word/document.xml');
  });
});
