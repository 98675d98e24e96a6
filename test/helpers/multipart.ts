/** Request bodies as fake platform APIs read them: the raw bytes, and the parts of a multipart/form-data upload. */
import type http from 'node:http';

export interface FormPart {
  /** The part's raw headers (`Content-Disposition`, `Content-Type`). */
  headers: string;
  /** The form field (`name="…"`). */
  name: string;
  /** The file name, for file parts (`filename="…"`). */
  filename?: string;
  content: Buffer;
}

/** The body's bytes, and its form parts when it is multipart/form-data (undefined otherwise). */
export async function readRequest(req: http.IncomingMessage): Promise<{ raw: Buffer; parts?: FormPart[] }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const type = req.headers['content-type'] ?? '';
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(type);
  if (!type.startsWith('multipart/form-data') || !boundary) return { raw };
  return { raw, parts: formParts(raw, boundary[1] ?? boundary[2] ?? '') };
}

function formParts(raw: Buffer, boundary: string): FormPart[] {
  const parts: FormPart[] = [];
  const delimiter = Buffer.from(`--${boundary}`);
  let at = raw.indexOf(delimiter);
  while (at !== -1) {
    const next = raw.indexOf(delimiter, at + delimiter.length);
    if (next === -1) break;
    const part = raw.subarray(at + delimiter.length + 2, next - 2);
    const split = part.indexOf('\r\n\r\n');
    const headers = part.subarray(0, split).toString('utf8');
    const filename = /filename="([^"]*)"/.exec(headers)?.[1];
    const name = /name="([^"]*)"/.exec(headers)?.[1] ?? '';
    parts.push({ headers, name, ...(filename !== undefined ? { filename } : {}), content: part.subarray(split + 4) });
    at = next;
  }
  return parts;
}

/** A JSON body, or {} when there is none. */
export const jsonBody = (raw: Buffer): Record<string, unknown> =>
  raw.length === 0 ? {} : (JSON.parse(raw.toString('utf8')) as Record<string, unknown>);
