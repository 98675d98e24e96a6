/**
 * XLSX: each worksheet, in workbook order, as a Markdown table under `--- Sheet: name ---` (cached values: what
 * Excel showed when the file was saved; dates by their number format). Empty rows are left out.
 */
import type { TextCollector } from './collector.js';
import { markdownTable } from './collector.js';
import { DocumentError } from './kinds.js';
import { mainPart, relationships, walkXml } from './xml.js';
import { openZip, type ZipArchive } from './zip.js';

export function readXlsx(data: Buffer, out: TextCollector): void {
  const zip = openZip(data, 'XLSX');
  const workbookPath = mainPart(zip.read('_rels/.rels'), 'xl/workbook.xml');
  const workbook = zip.read(workbookPath);
  if (!workbook) throw new DocumentError('not a valid XLSX file (it has no workbook part)');
  const folder = workbookPath.slice(0, workbookPath.lastIndexOf('/') + 1);
  const rels = relationships(zip.read(`${folder}_rels/${workbookPath.slice(folder.length)}.rels`), folder);
  const sheets: { name: string; path: string | undefined }[] = [];
  let date1904 = false;
  walkXml(workbook, {
    open(name, attributes) {
      if (name === 'workbookPr') date1904 = /^(1|true)$/.test(attributes.date1904 ?? '');
      if (name !== 'sheet') return;
      const relId = Object.entries(attributes).find(([key]) => key.endsWith(':id'))?.[1];
      sheets.push({ name: attributes.name ?? `Sheet${sheets.length + 1}`, path: relId ? rels.get(relId) : undefined });
    },
  });
  const strings = sharedStrings(zip, relationshipTarget(rels, 'sharedStrings') ?? `${folder}sharedStrings.xml`);
  const dateStyles = dateStyleIndexes(zip.read(relationshipTarget(rels, 'styles') ?? `${folder}styles.xml`));
  for (const sheet of sheets) {
    if (out.truncated) break;
    const xml = sheet.path ? zip.read(sheet.path) : undefined;
    if (!xml) continue;
    const rows = sheetRows(xml, strings, dateStyles, date1904, out.limit);
    if (rows.length > 0) out.add(`--- Sheet: ${sheet.name} ---\n${markdownTable(rows)}`);
  }
}

function relationshipTarget(rels: Map<string, string>, kind: string): string | undefined {
  for (const target of rels.values()) if (target.endsWith(`/${kind}.xml`) || target === `${kind}.xml`) return target;
  return undefined;
}

/** The shared string table: each `si`'s text runs joined (phonetic guides left out). */
function sharedStrings(zip: ZipArchive, path: string): string[] {
  const xml = zip.read(path);
  const strings: string[] = [];
  if (!xml) return strings;
  let current: string | undefined;
  let inText = false;
  let phonetic = 0;
  walkXml(xml, {
    open(name) {
      if (name === 'si') current = '';
      else if (name === 'rPh') phonetic++;
      else if (name === 't' && phonetic === 0) inText = true;
    },
    text(text) {
      if (inText && current !== undefined) current += text;
    },
    close(name) {
      if (name === 't') inText = false;
      else if (name === 'rPh') phonetic--;
      else if (name === 'si') {
        strings.push(current ?? '');
        current = undefined;
      }
    },
  });
  return strings;
}

const BUILT_IN_DATE_FORMATS = new Set([14, 15, 16, 17, 18, 19, 20, 21, 22, 45, 46, 47]);

/** Indexes into `cellXfs` whose number format shows a date or time. */
function dateStyleIndexes(xml: Buffer | undefined): Set<number> {
  const dates = new Set<number>();
  if (!xml) return dates;
  const customDates = new Set<number>();
  let inCellXfs = false;
  let index = 0;
  walkXml(xml, {
    open(name, attributes) {
      if (name === 'numFmt') {
        // Quoted text and [colours]/[conditions] are not date parts; what is left must have a date or time letter.
        const code = (attributes.formatCode ?? '').replace(/"[^"]*"|\[[^\]]*\]|\\./g, '');
        if (/[dmyhs]/i.test(code)) customDates.add(Number(attributes.numFmtId));
      } else if (name === 'cellXfs') inCellXfs = true;
      else if (name === 'xf' && inCellXfs) {
        const id = Number(attributes.numFmtId ?? 0);
        if (BUILT_IN_DATE_FORMATS.has(id) || customDates.has(id)) dates.add(index);
        index++;
      }
    },
    close(name) {
      if (name === 'cellXfs') inCellXfs = false;
    },
  });
  return dates;
}

/** A column's 0-based index from a cell reference (`C7` → 2). */
function columnIndex(ref: string | undefined, fallback: number): number {
  const letters = /^[A-Z]+/i.exec(ref ?? '')?.[0];
  if (!letters) return fallback;
  let index = 0;
  for (const letter of letters.toUpperCase()) index = index * 26 + (letter.charCodeAt(0) - 64);
  return index - 1;
}

/** Excel's serial day number as an ISO date (and time, when it has one). */
function serialDate(serial: number, date1904: boolean): string {
  if (!Number.isFinite(serial)) return String(serial);
  const ms = Math.round((serial - (date1904 ? -1462 : 0) - 25569) * 86_400_000);
  const iso = new Date(ms).toISOString();
  return Number.isInteger(serial) ? iso.slice(0, 10) : iso.slice(0, 19).replace('T', ' ');
}

const MAX_COLUMNS = 16_384;

function sheetRows(xml: Buffer, strings: string[], dateStyles: Set<number>, date1904: boolean, budget: number) {
  const rows: string[][] = [];
  let row: string[] | undefined;
  let cell: { column: number; type: string; style: number; value: string } | undefined;
  let inValue = false;
  let used = 0;
  walkXml(
    xml,
    {
      open(name, attributes) {
        if (name === 'row') row = [];
        else if (name === 'c' && row) {
          const column = Math.min(columnIndex(attributes.r, row.length), MAX_COLUMNS - 1);
          cell = { column, type: attributes.t ?? 'n', style: Number(attributes.s ?? 0), value: '' };
        } else if ((name === 'v' || name === 't') && cell) inValue = true;
      },
      text(text) {
        if (inValue && cell) cell.value += text;
      },
      close(name) {
        if (name === 'v' || name === 't') inValue = false;
        else if (name === 'c' && cell && row) {
          const text = cellText(cell, strings, dateStyles, date1904);
          used += text.length + 3 + Math.max(0, cell.column - row.length);
          while (row.length < cell.column) row.push('');
          row[cell.column] = text;
          cell = undefined;
        } else if (name === 'row' && row) {
          if (row.some((value) => value.trim() !== '')) rows.push(row);
          row = undefined;
        }
      },
    },
    () => used > budget,
  );
  return withoutEmptyColumns(rows);
}

/** Columns no row has a value in are left out (a sheet with one cell in column XFD is not a 16,384-column table). */
function withoutEmptyColumns(rows: string[][]): string[][] {
  const width = rows.reduce((widest, row) => Math.max(widest, row.length), 0);
  const keep = Array.from({ length: width }, (_, column) => column).filter((column) =>
    rows.some((row) => (row[column] ?? '').trim() !== ''),
  );
  return keep.length === width ? rows : rows.map((row) => keep.map((column) => row[column] ?? ''));
}

function cellText(
  cell: { type: string; style: number; value: string },
  strings: string[],
  dateStyles: Set<number>,
  date1904: boolean,
): string {
  switch (cell.type) {
    case 's':
      return strings[Number(cell.value)] ?? '';
    case 'b':
      return cell.value === '1' ? 'TRUE' : cell.value === '0' ? 'FALSE' : cell.value;
    case 'n':
      return cell.value !== '' && dateStyles.has(cell.style) ? serialDate(Number(cell.value), date1904) : cell.value;
    default:
      // str (a formula's text), inlineStr, e (an error such as #DIV/0!), d (an ISO date).
      return cell.value;
  }
}
