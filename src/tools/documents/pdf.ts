/**
 * PDF text per page through PDF.js (unpdf's build: one file, no worker file, no canvas), loaded on the first PDF.
 * Page markers and range syntax follow upstream: `--- Page N ---`, `pages: "3"` or `"2-5"`.
 */
import { TextCollector } from './collector.js';
import { DocumentError } from './kinds.js';

export interface PdfExtraction {
  text: string;
  truncated: boolean;
  totalPages: number;
  /** 1-based, inclusive; `end < start` when the PDF has no pages. */
  start: number;
  end: number;
}

export class PageRangeError extends DocumentError {}

/** `"3"` or `"2-5"` against the page count, 1-based; the end is clamped to the last page. */
export function parsePageRange(pages: string | undefined, total: number): { start: number; end: number } {
  if (pages === undefined || pages.trim() === '') return { start: 1, end: total };
  const match = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(pages);
  const start = Number(match?.[1]);
  const end = Number(match?.[2] ?? match?.[1]);
  if (!match || start < 1 || end < start || start > total) throw new PageRangeError(`invalid page range: ${pages}`);
  return { start, end: Math.min(end, total) };
}

interface TextItem {
  str?: string;
  hasEOL?: boolean;
}

export async function readPdf(
  data: Buffer,
  options: { pages?: string; maxPages: number; maxChars: number; signal?: AbortSignal },
): Promise<PdfExtraction> {
  const { getDocument } = await import('unpdf/pdfjs');
  const task = getDocument({
    // A copy: PDF.js detaches the buffer it is given, and a small Buffer's memory is Node's shared pool.
    data: new Uint8Array(data),
    // Errors only: PDF.js warns on stdout about every recoverable oddity of a file.
    verbosity: 0,
    // Never compile font programs from the file into functions (CVE-2024-4367 was that path).
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    stopAtErrors: false,
  });
  try {
    let document: Awaited<typeof task.promise>;
    try {
      document = await task.promise;
    } catch (error) {
      throw describeOpenError(error);
    }
    const totalPages = document.numPages;
    if (totalPages === 0) return { text: '', truncated: false, totalPages, start: 1, end: 0 };
    const range = parsePageRange(options.pages, totalPages);
    let end = Math.min(range.end, range.start + options.maxPages - 1);
    const out = new TextCollector(options.maxChars);
    for (let number = range.start; number <= end; number++) {
      if (options.signal?.aborted) throw new DocumentError('reading the PDF was cancelled');
      const text = await pageText(document, number);
      if (text && !out.add(`--- Page ${number} ---\n${text}`)) {
        end = number;
        break;
      }
    }
    return { text: out.render(), truncated: out.truncated, totalPages, start: range.start, end };
  } finally {
    await task.destroy();
  }
}

/** One page's text, lines ended where PDF.js saw a line end; a page that fails to parse says so and the rest go on. */
async function pageText(
  document: {
    getPage(number: number): Promise<{ getTextContent(): Promise<{ items: unknown[] }>; cleanup(): unknown }>;
  },
  number: number,
): Promise<string> {
  try {
    const page = await document.getPage(number);
    const content = await page.getTextContent();
    page.cleanup();
    return (content.items as TextItem[])
      .map((item) => (item.str ?? '') + (item.hasEOL ? '\n' : ''))
      .join('')
      .replace(/[ \t]+$/gm, '')
      .trim();
  } catch (error) {
    return `(this page could not be read: ${error instanceof Error ? error.message : String(error)})`;
  }
}

function describeOpenError(error: unknown): DocumentError {
  const name = error instanceof Error ? error.name : '';
  const message = error instanceof Error ? error.message : String(error);
  if (name === 'PasswordException') {
    return new DocumentError('the PDF is encrypted (password-protected); nanobot cannot open it');
  }
  if (name === 'InvalidPDFException') return new DocumentError(`not a valid PDF file (${message})`);
  return new DocumentError(`the PDF could not be read (${message})`);
}
