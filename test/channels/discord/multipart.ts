/**
 * Request bodies as Discord's REST API reads them: JSON, or multipart/form-data with a `payload_json` part and file
 * parts (`files[0]`, …).
 */
import type http from 'node:http';

export interface UploadedFile {
  field: string;
  name: string;
  size: number;
}

export async function readBody(
  req: http.IncomingMessage,
): Promise<{ body: Record<string, unknown>; files: UploadedFile[] }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const type = req.headers['content-type'] ?? '';
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(type);
  if (type.startsWith('multipart/form-data') && boundary) return parseMultipart(raw, boundary[1] ?? boundary[2] ?? '');
  if (raw.length === 0) return { body: {}, files: [] };
  return { body: JSON.parse(raw.toString('utf8')) as Record<string, unknown>, files: [] };
}

function parseMultipart(raw: Buffer, boundary: string): { body: Record<string, unknown>; files: UploadedFile[] } {
  let body: Record<string, unknown> = {};
  const files: UploadedFile[] = [];
  const delimiter = Buffer.from(`--${boundary}`);
  let at = raw.indexOf(delimiter);
  while (at !== -1) {
    const next = raw.indexOf(delimiter, at + delimiter.length);
    if (next === -1) break;
    const part = raw.subarray(at + delimiter.length + 2, next - 2);
    const split = part.indexOf('\r\n\r\n');
    const headers = part.subarray(0, split).toString('utf8');
    const content = part.subarray(split + 4);
    const field = /name="([^"]*)"/.exec(headers)?.[1] ?? '';
    const filename = /filename="([^"]*)"/.exec(headers)?.[1];
    if (filename !== undefined) files.push({ field, name: filename, size: content.length });
    else if (field === 'payload_json') body = JSON.parse(content.toString('utf8')) as Record<string, unknown>;
    at = next;
  }
  return { body, files };
}
