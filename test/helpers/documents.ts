/**
 * Small real documents for tests, written from scratch: PDFs (optionally RC4-encrypted with a user password, as PDF 1.4
 * "Standard security handler, revision 2" specifies), and DOCX, XLSX and PPTX packages (a zip of the XML parts
 * their readers need). Nothing here is read by src/.
 */
import { createHash } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';

// ---------- PDF ----------

const PASSWORD_PAD = Buffer.from('28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A', 'hex');

function rc4(key: Buffer, data: Buffer): Buffer {
  const s = Array.from({ length: 256 }, (_, i) => i);
  for (let i = 0, j = 0; i < 256; i++) {
    j = (j + (s[i] as number) + (key[i % key.length] as number)) & 255;
    [s[i], s[j]] = [s[j] as number, s[i] as number];
  }
  const out = Buffer.alloc(data.length);
  for (let n = 0, i = 0, j = 0; n < data.length; n++) {
    i = (i + 1) & 255;
    j = (j + (s[i] as number)) & 255;
    [s[i], s[j]] = [s[j] as number, s[i] as number];
    out[n] = (data[n] as number) ^ (s[((s[i] as number) + (s[j] as number)) & 255] as number);
  }
  return out;
}

const md5 = (...parts: Buffer[]) => createHash('md5').update(Buffer.concat(parts)).digest();
const padded = (password: string) => Buffer.concat([Buffer.from(password, 'latin1'), PASSWORD_PAD]).subarray(0, 32);

export interface PdfOptions {
  /** Encrypt with this user password (RC4, 40-bit): a reader without it cannot open the file. */
  userPassword?: string;
}

/** A PDF with one page per entry, each page's lines drawn in Helvetica. */
export function makePdf(pages: readonly (readonly string[])[], options: PdfOptions = {}): Buffer {
  const objects: { body: string; stream?: Buffer }[] = [];
  objects.push({ body: '<< /Type /Catalog /Pages 2 0 R >>' });
  const kids = pages.map((_, i) => `${4 + i * 2} 0 R`).join(' ');
  objects.push({ body: `<< /Type /Pages /Kids [${kids}] /Count ${pages.length} >>` });
  objects.push({ body: '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>' });
  const escapePdf = (text: string) => text.replace(/[\\()]/g, (c) => `\\${c}`);
  pages.forEach((lines, i) => {
    objects.push({
      body:
        '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] ' +
        `/Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`,
    });
    const content = lines.map((line, j) => `BT /F1 12 Tf 72 ${720 - j * 16} Td (${escapePdf(line)}) Tj ET`).join('\n');
    objects.push({ body: '', stream: Buffer.from(content, 'latin1') });
  });

  const fileId = createHash('md5').update(JSON.stringify(pages)).digest();
  let encryptRef = '';
  if (options.userPassword !== undefined) {
    const owner = md5(padded(`${options.userPassword}-owner`)).subarray(0, 5);
    const o = rc4(owner, padded(options.userPassword));
    const p = Buffer.alloc(4);
    p.writeInt32LE(-4);
    const key = md5(padded(options.userPassword), o, p, fileId).subarray(0, 5);
    const u = rc4(key, PASSWORD_PAD);
    objects.forEach((object, index) => {
      if (!object.stream) return;
      const number = Buffer.from([(index + 1) & 255, ((index + 1) >> 8) & 255, 0, 0, 0]);
      object.stream = rc4(md5(key, number).subarray(0, 10), object.stream);
    });
    objects.push({
      body: `<< /Filter /Standard /V 1 /R 2 /O <${o.toString('hex')}> /U <${u.toString('hex')}> /P -4 >>`,
    });
    encryptRef = ` /Encrypt ${objects.length} 0 R`;
  }

  const chunks: Buffer[] = [Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  let length = chunks[0]?.length ?? 0;
  const push = (chunk: Buffer) => {
    chunks.push(chunk);
    length += chunk.length;
  };
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(length);
    if (object.stream) {
      push(Buffer.from(`${index + 1} 0 obj\n<< /Length ${object.stream.length} >>\nstream\n`, 'latin1'));
      push(object.stream);
      push(Buffer.from('\nendstream\nendobj\n', 'latin1'));
    } else push(Buffer.from(`${index + 1} 0 obj\n${object.body}\nendobj\n`, 'latin1'));
  });
  const xref = length;
  const entries = offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('');
  const id = fileId.toString('hex');
  push(
    Buffer.from(
      `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${entries}` +
        `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /ID [<${id}> <${id}>]${encryptRef} >>\n` +
        `startxref\n${xref}\n%%EOF\n`,
      'latin1',
    ),
  );
  return Buffer.concat(chunks);
}

// ---------- zip ----------

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = (CRC_TABLE[(crc ^ byte) & 255] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

export interface ZipEntryOptions {
  /** Set the "encrypted" flag bit (the data is left as it is). */
  encryptedFlag?: boolean;
}

/** A zip archive of `files` (deflated), as Office writes its packages. */
export function makeZip(files: Record<string, string | Buffer>, options: ZipEntryOptions = {}): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of Object.entries(files)) {
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf8');
    const packed = deflateRawSync(data);
    const nameBytes = Buffer.from(name, 'utf8');
    const flags = 0x0800 | (options.encryptedFlag ? 1 : 0);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(flags, 6);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(crc32(data), 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE(20, 4);
    header.writeUInt16LE(20, 6);
    header.writeUInt16LE(flags, 8);
    header.writeUInt16LE(8, 10);
    header.writeUInt32LE(crc32(data), 16);
    header.writeUInt32LE(packed.length, 20);
    header.writeUInt32LE(data.length, 24);
    header.writeUInt16LE(nameBytes.length, 28);
    header.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, packed);
    central.push(header, nameBytes);
    offset += local.length + nameBytes.length + packed.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

// ---------- Office ----------

const xmlText = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const PKG_REL = 'http://schemas.openxmlformats.org/package/2006/relationships';

function rootRels(target: string): string {
  return `${XML}<Relationships xmlns="${PKG_REL}"><Relationship Id="rId1" Type="${REL}/officeDocument" Target="${target}"/></Relationships>`;
}

function contentTypes(overrides: Record<string, string>): string {
  const parts = Object.entries(overrides)
    .map(([part, type]) => `<Override PartName="/${part}" ContentType="${type}"/>`)
    .join('');
  return (
    `${XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
    `<Default Extension="xml" ContentType="application/xml"/>${parts}</Types>`
  );
}

export type DocxBlock = string | { heading: string; level?: number } | { table: string[][] };

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

/** A DOCX whose body is `blocks`: paragraphs, headings and tables (a table cell may hold several lines). */
export function makeDocx(blocks: readonly DocxBlock[]): Buffer {
  const run = (text: string) => `<w:r><w:t xml:space="preserve">${xmlText(text)}</w:t></w:r>`;
  const paragraph = (text: string, style?: string) =>
    `<w:p>${style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : ''}${run(text)}</w:p>`;
  const body = blocks
    .map((block) => {
      if (typeof block === 'string') return paragraph(block);
      if ('heading' in block) return paragraph(block.heading, `Heading${block.level ?? 1}`);
      const rows = block.table
        .map(
          (row) =>
            `<w:tr>${row
              .map(
                (cell) =>
                  `<w:tc>${cell
                    .split('\n')
                    .map((line) => paragraph(line))
                    .join('')}</w:tc>`,
              )
              .join('')}</w:tr>`,
        )
        .join('');
      return `<w:tbl><w:tblPr/>${rows}</w:tbl>`;
    })
    .join('');
  return makeZip({
    '[Content_Types].xml': contentTypes({
      'word/document.xml': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml',
    }),
    '_rels/.rels': rootRels('word/document.xml'),
    'word/document.xml': `${XML}<w:document xmlns:w="${W}"><w:body>${body}<w:sectPr/></w:body></w:document>`,
  });
}

export type XlsxCell = string | number | boolean | Date | null;

const S = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';

/** An XLSX with one worksheet per entry (strings shared, numbers and booleans inline, dates with a date format). */
export function makeXlsx(sheets: Record<string, readonly (readonly XlsxCell[])[]>): Buffer {
  const shared: string[] = [];
  const files: Record<string, string> = {};
  const names = Object.keys(sheets);
  names.forEach((name, index) => {
    const rows = (sheets[name] ?? [])
      .map((row, r) => {
        const cells = row
          .map((value, c) => {
            const ref = `${String.fromCharCode(65 + c)}${r + 1}`;
            if (value === null) return '';
            if (typeof value === 'number') return `<c r="${ref}"><v>${value}</v></c>`;
            if (typeof value === 'boolean') return `<c r="${ref}" t="b"><v>${value ? 1 : 0}</v></c>`;
            if (value instanceof Date) {
              const serial = value.getTime() / 86_400_000 + 25569;
              return `<c r="${ref}" s="1"><v>${serial}</v></c>`;
            }
            shared.push(value);
            return `<c r="${ref}" t="s"><v>${shared.length - 1}</v></c>`;
          })
          .join('');
        return `<row r="${r + 1}">${cells}</row>`;
      })
      .join('');
    files[`xl/worksheets/sheet${index + 1}.xml`] =
      `${XML}<worksheet xmlns="${S}"><sheetData>${rows}</sheetData></worksheet>`;
  });
  const sheetList = names
    .map((name, i) => `<sheet name="${xmlText(name)}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`)
    .join('');
  const sheetRels = names
    .map((_, i) => `<Relationship Id="rId${i + 1}" Type="${REL}/worksheet" Target="worksheets/sheet${i + 1}.xml"/>`)
    .join('');
  const n = names.length;
  return makeZip({
    '[Content_Types].xml': contentTypes({
      'xl/workbook.xml': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml',
    }),
    '_rels/.rels': rootRels('xl/workbook.xml'),
    'xl/workbook.xml': `${XML}<workbook xmlns="${S}" xmlns:r="${REL}"><sheets>${sheetList}</sheets></workbook>`,
    'xl/_rels/workbook.xml.rels':
      `${XML}<Relationships xmlns="${PKG_REL}">${sheetRels}` +
      `<Relationship Id="rId${n + 1}" Type="${REL}/sharedStrings" Target="sharedStrings.xml"/>` +
      `<Relationship Id="rId${n + 2}" Type="${REL}/styles" Target="styles.xml"/></Relationships>`,
    'xl/sharedStrings.xml':
      `${XML}<sst xmlns="${S}" count="${shared.length}" uniqueCount="${shared.length}">` +
      `${shared.map((text) => `<si><t xml:space="preserve">${xmlText(text)}</t></si>`).join('')}</sst>`,
    'xl/styles.xml':
      `${XML}<styleSheet xmlns="${S}"><cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/>` +
      '</cellXfs></styleSheet>',
    ...files,
  });
}

const A = 'http://schemas.openxmlformats.org/drawingml/2006/main';
const P = 'http://schemas.openxmlformats.org/presentationml/2006/main';

/** A PPTX with one slide per entry, each line of a slide in its own text box paragraph. */
export function makePptx(slides: readonly (readonly string[])[]): Buffer {
  const files: Record<string, string> = {};
  slides.forEach((lines, i) => {
    const paragraphs = lines.map((line) => `<a:p><a:r><a:rPr lang="en-US"/><a:t>${xmlText(line)}</a:t></a:r></a:p>`);
    files[`ppt/slides/slide${i + 1}.xml`] =
      `${XML}<p:sld xmlns:a="${A}" xmlns:p="${P}" xmlns:r="${REL}"><p:cSld><p:spTree>` +
      `<p:sp><p:nvSpPr><p:cNvPr id="2" name="Text ${i + 1}"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr><p:spPr/>` +
      `<p:txBody><a:bodyPr/><a:lstStyle/>${paragraphs.join('')}</p:txBody></p:sp>` +
      '</p:spTree></p:cSld></p:sld>';
  });
  const ids = slides.map((_, i) => `<p:sldId id="${256 + i}" r:id="rId${i + 1}"/>`).join('');
  const rels = slides
    .map((_, i) => `<Relationship Id="rId${i + 1}" Type="${REL}/slide" Target="slides/slide${i + 1}.xml"/>`)
    .join('');
  return makeZip({
    '[Content_Types].xml': contentTypes({
      'ppt/presentation.xml': 'application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml',
    }),
    '_rels/.rels': rootRels('ppt/presentation.xml'),
    'ppt/presentation.xml': `${XML}<p:presentation xmlns:p="${P}" xmlns:r="${REL}"><p:sldIdLst>${ids}</p:sldIdLst></p:presentation>`,
    'ppt/_rels/presentation.xml.rels': `${XML}<Relationships xmlns="${PKG_REL}">${rels}</Relationships>`,
    ...files,
  });
}
