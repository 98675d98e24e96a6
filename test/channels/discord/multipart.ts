/**
 * Request bodies as Discord's REST API reads them: JSON, or multipart/form-data with a `payload_json` part and file
 * parts (`files[0]`, …).
 */
import type http from 'node:http';
import { jsonBody, readRequest } from '../../helpers/multipart.js';

export interface UploadedFile {
  field: string;
  name: string;
  size: number;
}

export async function readBody(
  req: http.IncomingMessage,
): Promise<{ body: Record<string, unknown>; files: UploadedFile[] }> {
  const { raw, parts } = await readRequest(req);
  if (!parts) return { body: jsonBody(raw), files: [] };
  let body: Record<string, unknown> = {};
  const files: UploadedFile[] = [];
  for (const part of parts) {
    if (part.filename !== undefined) files.push({ field: part.name, name: part.filename, size: part.content.length });
    else if (part.name === 'payload_json') body = jsonBody(part.content);
  }
  return { body, files };
}
