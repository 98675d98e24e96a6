/**
 * Hostile documents through read_file: zip bombs and lying zip headers, too many parts, tables nested or multiplied
 * past the limits, entity-expansion XML, a sheet that claims the last column. Each is an error result or a small
 * output, never a crash or a memory blow-up.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createReadFileTool } from '../../src/tools/filesystem/read-file.js';
import { makeDocx, makeZip } from '../helpers/documents.js';
import { makeContext, makeTempDir, textOf } from '../tools/helpers.js';

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

async function readAs(name: string, content: Buffer) {
  const workspace = makeTempDir();
  fs.writeFileSync(path.join(workspace, name), content);
  const tool = createReadFileTool({ policy: createPathPolicy({ workspace, restrictToWorkspace: true }) });
  const result = await tool.execute({ path: name }, makeContext());
  return { isError: result.isError === true, text: textOf(result) };
}

/** A DOCX whose word/document.xml is `body` as written (no root relationships: the usual path is used). */
const rawDocx = (body: string, prolog = '') =>
  makeZip({ 'word/document.xml': `${prolog}<w:document xmlns:w="${W}"><w:body>${body}</w:body></w:document>` });

describe('hostile documents', () => {
  it('refuses a part whose declared size is over the limit, before inflating it', async () => {
    const docx = makeDocx(['hello']);
    const central = docx.lastIndexOf(Buffer.from('word/document.xml')) - 46;
    docx.writeUInt32LE(200 * 1024 * 1024, central + 24);
    expect(await readAs('big.docx', docx)).toEqual({
      isError: true,
      text: 'Error: Cannot read big.docx: the DOCX file holds a part larger than 128 MiB.',
    });
  });

  it('stops a zip bomb at the size its directory declares', async () => {
    // 8 MB of zeros deflates to ~8 KB; the directory says 1 KB.
    const docx = makeZip({ 'word/document.xml': Buffer.alloc(8 * 1024 * 1024) });
    const central = docx.lastIndexOf(Buffer.from('word/document.xml')) - 46;
    docx.writeUInt32LE(1024, central + 24);
    const result = await readAs('bomb.docx', docx);
    expect(result.isError).toBe(true);
    expect(result.text).toContain('damaged entry word/document.xml');
  });

  it('refuses an Office file over 50 MiB before reading it', async () => {
    const workspace = makeTempDir();
    const file = path.join(workspace, 'huge.xlsx');
    fs.writeFileSync(file, '');
    fs.truncateSync(file, 51 * 1024 * 1024);
    const tool = createReadFileTool({ policy: createPathPolicy({ workspace, restrictToWorkspace: true }) });
    const result = await tool.execute({ path: 'huge.xlsx' }, makeContext());
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('Error: huge.xlsx is 53477376 bytes, over the 50 MiB limit for XLSX documents.');
  });

  it('refuses an archive with more parts than the limit', async () => {
    const files = Object.fromEntries(Array.from({ length: 10_001 }, (_, i) => [`p/${i}.xml`, '']));
    const result = await readAs('many.xlsx', makeZip(files));
    expect(result).toEqual({
      isError: true,
      text: 'Error: Cannot read many.xlsx: the XLSX file holds too many parts (10001, the limit is 10000).',
    });
  });

  it('refuses tables nested deeper than 8 levels', async () => {
    let table = '<w:p><w:r><w:t>deep</w:t></w:r></w:p>';
    for (let i = 0; i < 9; i++) table = `<w:tbl><w:tr><w:tc>${table}</w:tc></w:tr></w:tbl>`;
    expect(await readAs('nested.docx', rawDocx(table))).toEqual({
      isError: true,
      text: 'Error: Cannot read nested.docx: the DOCX file nests tables more than 8 deep.',
    });
  });

  it('refuses more than 100,000 table cells', async () => {
    const row = `<w:tr>${'<w:tc><w:p/></w:tc>'.repeat(1000)}</w:tr>`;
    const result = await readAs('cells.docx', rawDocx(`<w:tbl>${row.repeat(101)}</w:tbl>`));
    expect(result).toEqual({
      isError: true,
      text: 'Error: Cannot read cells.docx: the DOCX file has more than 100000 table cells.',
    });
  });

  it('does not expand entities a document defines for itself (billion laughs)', async () => {
    const entities = ['<!ENTITY lol "lol">'];
    for (let i = 1; i <= 9; i++) entities.push(`<!ENTITY lol${i} "${`&lol${i - 1 || ''};`.repeat(10)}">`);
    const prolog = `<?xml version="1.0"?><!DOCTYPE w:document [${entities.join('')}]>`;
    const result = await readAs('laughs.docx', rawDocx('<w:p><w:r><w:t>a &lol9; b</w:t></w:r></w:p>', prolog));
    expect(result.isError).toBe(false);
    expect(result.text.length).toBeLessThan(100);
    expect(result.text).not.toContain('lollol');
  });

  it('renders a sheet with one cell in the last column as a small table', async () => {
    const S = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
    const R = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
    const xlsx = makeZip({
      'xl/workbook.xml': `<workbook xmlns="${S}" xmlns:r="${R}"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>`,
      'xl/_rels/workbook.xml.rels':
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
        `<Relationship Id="rId1" Type="${R}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`,
      'xl/worksheets/sheet1.xml':
        `<worksheet xmlns="${S}"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>left</t></is></c>` +
        '<c r="XFD1" t="inlineStr"><is><t>far</t></is></c></row></sheetData></worksheet>',
    });
    expect(await readAs('wide.xlsx', xlsx)).toEqual({
      isError: false,
      text: '--- Sheet: S ---\n| left | far |\n| --- | --- |',
    });
  });
});
