/**
 * A loopback fake of the speech APIs nanobot talks to, speaking their real wire shapes:
 * OpenAI-style `POST /v1/audio/transcriptions` (multipart, or OpenRouter's JSON `input_audio`), Xiaomi MiMo's
 * `POST /v1/chat/completions` with an `input_audio` part, StepFun's `POST /v1/audio/asr/sse` (SSE answer),
 * AssemblyAI's `POST /v2/upload` → `POST /v2/transcript` → `GET /v2/transcript/{id}` (queued, then completed), and
 * `POST /v1/audio/speech` (returns Ogg bytes). Every request is recorded; `failNext(path, status)` scripts errors.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface VoiceRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Multipart fields (files as `{ filename, size, type }`), or the parsed JSON body. */
  fields: Record<string, unknown>;
}

/** The first bytes of an Ogg stream: what a spoken reply starts with. */
export const OGG_BYTES = Buffer.concat([Buffer.from('OggS'), Buffer.alloc(60, 1)]);

export async function startFakeVoiceApi(options: { transcript?: string; key?: string } = {}) {
  const requests: VoiceRequest[] = [];
  const failures = new Map<string, { status: number; body: string }[]>();
  let transcript = options.transcript ?? 'hello from a voice note';
  const polls = new Map<string, number>();
  const key = options.key;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const path = new URL(req.url ?? '/', 'http://fake').pathname;
      const request: VoiceRequest = {
        method: req.method ?? '',
        path,
        headers: req.headers,
        body,
        fields: parse(req, body),
      };
      requests.push(request);
      const failure = failures.get(path)?.shift();
      if (failure) {
        res.writeHead(failure.status, { 'content-type': 'application/json' });
        res.end(failure.body);
        return;
      }
      const auth = String(req.headers.authorization ?? '');
      if (key && auth !== `Bearer ${key}` && auth !== key) return json(res, 401, { error: { message: 'bad key' } });
      route(request, res);
    });
  });

  function route(request: VoiceRequest, res: http.ServerResponse) {
    const { path, method } = request;
    if (method === 'POST' && path.endsWith('/audio/transcriptions')) return json(res, 200, { text: ` ${transcript} ` });
    if (method === 'POST' && path.endsWith('/chat/completions'))
      return json(res, 200, { choices: [{ message: { role: 'assistant', content: transcript } }] });
    if (method === 'POST' && path.endsWith('/audio/asr/sse')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ type: 'transcript.text.delta', delta: 'hel' })}\n\n`);
      res.end(`data: ${JSON.stringify({ type: 'transcript.text.done', text: transcript })}\n\n`);
      return;
    }
    if (method === 'POST' && path.endsWith('/v2/upload'))
      return json(res, 200, { upload_url: 'https://cdn.assemblyai.test/upload/abc' });
    if (method === 'POST' && path.endsWith('/v2/transcript')) return json(res, 200, { id: 'tr-1', status: 'queued' });
    const poll = /\/v2\/transcript\/([^/]+)$/.exec(path);
    if (method === 'GET' && poll?.[1]) {
      const n = (polls.get(poll[1]) ?? 0) + 1;
      polls.set(poll[1], n);
      return json(
        res,
        200,
        n < 2 ? { id: poll[1], status: 'processing' } : { id: poll[1], status: 'completed', text: transcript },
      );
    }
    if (method === 'POST' && path.endsWith('/audio/speech')) {
      res.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': OGG_BYTES.length });
      res.end(OGG_BYTES);
      return;
    }
    json(res, 404, { error: 'not found' });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    to: (suffix: string) => requests.filter((r) => r.path.endsWith(suffix)),
    setTranscript(text: string) {
      transcript = text;
    },
    failNext(path: string, status: number, body = '{"error":{"message":"scripted failure"}}') {
      failures.set(path, [...(failures.get(path) ?? []), { status, body }]);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type FakeVoiceApi = Awaited<ReturnType<typeof startFakeVoiceApi>>;

function json(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function parse(req: http.IncomingMessage, body: Buffer): Record<string, unknown> {
  const type = req.headers['content-type'] ?? '';
  if (type.startsWith('application/json')) {
    try {
      return JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    } catch {
      return {};
    }
  }
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(type);
  if (!type.startsWith('multipart/form-data') || !boundary) return {};
  const fields: Record<string, unknown> = {};
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const next = body.indexOf(delimiter, at + delimiter.length);
    if (next === -1) break;
    const part = body.subarray(at + delimiter.length + 2, next - 2);
    const split = part.indexOf('\r\n\r\n');
    const headers = part.subarray(0, split).toString('utf8');
    const content = part.subarray(split + 4);
    const name = /name="([^"]*)"/.exec(headers)?.[1] ?? '';
    const filename = /filename="([^"]*)"/.exec(headers)?.[1];
    const partType = /content-type:\s*([^\r\n]+)/i.exec(headers)?.[1];
    fields[name] =
      filename !== undefined ? { filename, size: content.length, type: partType } : content.toString('utf8');
    at = next;
  }
  return fields;
}
