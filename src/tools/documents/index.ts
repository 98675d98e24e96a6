/** Document text for read_file: PDF pages, DOCX text and tables, XLSX sheets, PPTX slides. */
import { TextCollector } from './collector.js';
import { readDocx } from './docx.js';
import type { DocumentKind } from './kinds.js';
import { readPptx } from './pptx.js';
import { readXlsx } from './xlsx.js';

export { DocumentError, type DocumentKind, documentKind } from './kinds.js';
export { PageRangeError, type PdfExtraction, readPdf } from './pdf.js';

/** DOCX, XLSX or PPTX text, at most `maxChars` characters; throws DocumentError for a file it cannot read. */
export function readOfficeDocument(
  kind: Exclude<DocumentKind, 'pdf'>,
  data: Buffer,
  maxChars: number,
): { text: string; truncated: boolean } {
  const out = new TextCollector(maxChars);
  if (kind === 'docx') readDocx(data, out);
  else if (kind === 'xlsx') readXlsx(data, out);
  else readPptx(data, out);
  return { text: out.render(), truncated: out.truncated };
}
