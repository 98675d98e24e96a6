/**
 * read_file: numbered lines (`N| text`) with paging, images as multimodal parts, documents (PDF, DOCX, XLSX, PPTX) as
 * their text, other binary files refused, and a short stub instead of the same content again when the model re-reads
 * a file that has not changed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { type CheckedFile, openCheckedFile, policyCheck } from '../../security/checked-open.js';
import type { PathPolicy } from '../../security/workspace.js';
import { type DocumentKind, documentKind } from '../documents/kinds.js';
import { defineTool, fail, ok, type ToolResult } from '../types.js';
import { openFailure } from './open-failure.js';

export const DEFAULT_READ_LIMIT = 2000;
export const MAX_READ_CHARS = 128_000;
export const MAX_READ_BYTES = 100 * 1024 * 1024;
/** Office documents are unpacked in memory, so they get upstream's lower limit. */
export const MAX_OFFICE_BYTES = 50 * 1024 * 1024;
/** PDF pages one read returns at most (upstream's limit); the footer names the next range. */
export const MAX_PDF_PAGES = 20;

const IMAGE_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
};

export interface ReadFileToolOptions {
  policy: PathPolicy;
}

const parameters = z.object({
  path: z.string().describe('File to read: relative to the workspace, absolute, or starting with ~.'),
  offset: z.number().int().min(1).optional().describe('1-based line number to start from (default 1).'),
  limit: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`Maximum number of lines to return (default ${DEFAULT_READ_LIMIT}).`),
  pages: z
    .string()
    .optional()
    .describe(`Page range for PDF files, e.g. '1-5' or '3' (default: all, max ${MAX_PDF_PAGES} pages per read).`),
  force: z.boolean().optional().describe('Return the content even if the file is unchanged since the last read.'),
});

interface ReadStamp {
  fingerprint: string;
  window: string;
}

/** True when the first bytes look like binary data (a NUL byte or many control characters). */
export function looksBinary(sample: Uint8Array): boolean {
  if (sample.length === 0) return false;
  let control = 0;
  for (const byte of sample) {
    if (byte === 0) return true;
    if (byte < 9 || (byte > 13 && byte < 32)) control++;
  }
  return control / sample.length > 0.3;
}

const readFd = promisify(fs.read);
const readWholeFd = promisify(fs.readFile);

async function readHead(fd: number, bytes: number): Promise<Uint8Array> {
  const buffer = Buffer.alloc(bytes);
  const { bytesRead } = await readFd(fd, buffer, 0, bytes, 0);
  return buffer.subarray(0, bytesRead);
}

/** Formats lines `offset…` as `N| text`, stopping at `limit` lines or the character cap. */
export function formatLines(text: string, offset: number, limit: number): string {
  const lines = text.split('\n');
  if (lines.length > 0 && lines.at(-1) === '') lines.pop();
  const total = lines.length;
  if (total === 0) return '(Empty file)';
  if (offset > total) return `Error: offset ${offset} is beyond the end of the file (${total} lines total).`;

  const out: string[] = [];
  let used = 0;
  let lineNo = offset;
  const lastWanted = Math.min(total, offset + limit - 1);
  for (; lineNo <= lastWanted; lineNo++) {
    const content = (lines[lineNo - 1] as string).replace(/\r$/, '');
    let rendered = `${lineNo}| ${content}`;
    if (used + rendered.length + 1 > MAX_READ_CHARS) {
      if (out.length > 0) break;
      // A single huge line (minified code): show its start rather than nothing.
      rendered = `${rendered.slice(0, MAX_READ_CHARS - 200)} … [line truncated, ${content.length} characters]`;
      out.push(rendered);
      lineNo++;
      break;
    }
    out.push(rendered);
    used += rendered.length + 1;
  }
  const shownLast = lineNo - 1;
  const footer =
    shownLast >= total
      ? `(End of file — ${total} lines total)`
      : `(Showing lines ${offset}–${shownLast} of ${total}. Use offset=${shownLast + 1} to continue.)`;
  return `${out.join('\n')}\n\n${footer}`;
}

export function createReadFileTool(options: ReadFileToolOptions) {
  // Per session, so one chat's read does not hide the content from another chat.
  const lastReads = new Map<string, ReadStamp>();

  return defineTool({
    name: 'read_file',
    description:
      'Read a text file with line numbers (`N| text`), view an image (png, jpg, gif, webp), or get the text of a ' +
      'document: PDF (per page; use pages), DOCX (tables as Markdown), XLSX (each sheet as a table), PPTX (per slide). ' +
      `Returns up to ${DEFAULT_READ_LIMIT} lines; use offset/limit to page through larger files. ` +
      'Attachments from chats are given by path: read them with this tool when their contents are needed.',
    parameters,
    concurrencySafe: true,
    async execute(args, ctx): Promise<ToolResult> {
      const resolved = options.policy.resolve(args.path, 'read');
      if (!resolved.ok) return fail(resolved.error);
      // The look before the open only words the usual mistakes; what is read is decided on the opened fd.
      const seen = fs.statSync(resolved.path, { throwIfNoEntry: false });
      if (!seen) return fail(`File not found: ${args.path}`);
      if (seen.isDirectory()) return fail(`${args.path} is a directory. Use list_dir to see its contents.`);
      if (!seen.isFile()) return fail(`${args.path} is not a regular file.`);
      let opened: CheckedFile;
      try {
        opened = openCheckedFile(resolved.path, policyCheck(options.policy, 'read'));
      } catch (error) {
        return fail(openFailure(error, args.path));
      }
      try {
        return await readOpened(opened, resolved.path, args, ctx.sessionKey, ctx.signal);
      } finally {
        fs.closeSync(opened.fd);
      }
    },
  });

  /** Everything below reads the one opened fd: the size check, the binary sniff, the image and the text. */
  async function readOpened(
    opened: CheckedFile,
    file: string,
    args: z.infer<typeof parameters>,
    sessionKey: string | undefined,
    signal: AbortSignal,
  ): Promise<ToolResult> {
    const stat = fs.fstatSync(opened.fd, { bigint: true });
    if (stat.size > BigInt(MAX_READ_BYTES)) {
      return fail(`${args.path} is ${stat.size} bytes, over the 100 MiB read limit. Use exec with head, tail or grep.`);
    }

    const offset = args.offset ?? 1;
    const limit = args.limit ?? DEFAULT_READ_LIMIT;
    // Inode + mtime (ns) + size: atomic writes replace the inode, so any edit changes the fingerprint.
    const fingerprint = `${stat.ino}:${stat.mtimeNs}:${stat.size}`;
    const key = `${sessionKey ?? ''}\0${file}`;
    const window = `${offset}:${limit}:${args.pages ?? ''}`;
    const previous = lastReads.get(key);
    if (!args.force && previous?.fingerprint === fingerprint && previous.window === window) {
      return ok(`[File unchanged since last read: ${args.path}]`);
    }

    const mimeType = IMAGE_TYPES[path.extname(file).toLowerCase()];
    const kind = documentKind(file);
    let result: ToolResult;
    if (kind && kind !== 'pdf' && stat.size > BigInt(MAX_OFFICE_BYTES)) {
      return fail(`${args.path} is ${stat.size} bytes, over the 50 MiB limit for ${kind.toUpperCase()} documents.`);
    }
    if (kind) {
      result = await readDocument(kind, await readWholeFd(opened.fd), args.path, args.pages, signal);
      if (result.isError) return result;
    } else if (mimeType) {
      const data = await readWholeFd(opened.fd);
      result = ok([
        { type: 'text', text: `Image file: ${args.path} (${data.length} bytes, ${mimeType})` },
        { type: 'image_url', image_url: { url: `data:${mimeType};base64,${data.toString('base64')}` } },
      ]);
    } else {
      if (looksBinary(await readHead(opened.fd, 8192))) {
        return fail(
          `${args.path} is a binary file (${stat.size} bytes) and cannot be shown as text. ` +
            'read_file reads text files and images (png, jpg, jpeg, gif, webp).',
        );
      }
      const text = (await readWholeFd(opened.fd, 'utf8')).replace(/^\uFEFF/, '');
      const formatted = formatLines(text, offset, limit);
      if (formatted.startsWith('Error:')) return fail(formatted);
      result = ok(formatted);
    }
    lastReads.set(key, { fingerprint, window });
    return result;
  }
}

/** A document's text (parsers load on the first one), with upstream's footers; a file it cannot read is an error. */
async function readDocument(
  kind: DocumentKind,
  data: Buffer,
  shown: string,
  pages: string | undefined,
  signal: AbortSignal,
): Promise<ToolResult> {
  const documents = await import('../documents/index.js');
  const label = kind.toUpperCase();
  try {
    if (kind !== 'pdf') {
      const { text, truncated } = documents.readOfficeDocument(kind, data, MAX_READ_CHARS);
      if (!text) return ok(`(${label} has no extractable text: ${shown})`);
      return ok(truncated ? `${text}\n\n(Document text truncated at ~128K characters.)` : text);
    }
    const pdf = await documents.readPdf(data, { pages, maxPages: MAX_PDF_PAGES, maxChars: MAX_READ_CHARS, signal });
    if (!pdf.text && (pdf.start > 1 || pdf.end < pdf.totalPages)) {
      return ok(`(No extractable text on pages ${pdf.start}-${pdf.end} of ${pdf.totalPages} in ${shown}.)`);
    }
    if (!pdf.text) return ok(`(PDF has no extractable text: ${shown}. A scanned PDF holds only images.)`);
    if (pdf.end >= pdf.totalPages) return ok(pdf.text);
    const next = `${pdf.end + 1}-${Math.min(pdf.end + MAX_PDF_PAGES, pdf.totalPages)}`;
    return ok(
      `${pdf.text}\n\n(Showing pages ${pdf.start}-${pdf.end} of ${pdf.totalPages}. Use pages='${next}' to continue.)`,
    );
  } catch (error) {
    if (error instanceof documents.PageRangeError) {
      return fail(`Invalid page range '${pages}'. Use a page number or a range like '1-5'.`);
    }
    if (error instanceof documents.DocumentError) return fail(`Cannot read ${shown}: ${error.message}.`);
    return fail(`Cannot read ${shown} as ${label}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
