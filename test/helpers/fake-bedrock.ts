/**
 * A loopback fake of the Bedrock runtime's ConverseStream endpoint, faithful enough for the real
 * `@aws-sdk/client-bedrock-runtime` to talk to it: HTTP/2 without TLS (the SDK's default handler speaks HTTP/2; with
 * an `http://` endpoint it uses prior knowledge), and responses in the binary `application/vnd.amazon.eventstream`
 * framing (prelude, headers, JSON payload, CRC32s). Point the SDK at `fake.url` with the `endpoint` option.
 *
 *   const fake = await startFakeBedrock([{ events: converseText('Hello') }]);
 *   // POST /model/<modelId>/converse-stream is recorded in fake.requests (path, headers, JSON body)
 *
 * A step is a list of stream events (`{ event: 'contentBlockDelta', payload }`), an in-stream exception
 * (`{ exception: 'throttlingException', message }`), or an HTTP error (`{ status, errorType, message }`).
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';

export type BedrockStreamItem =
  | { event: string; payload: Record<string, unknown> }
  | { exception: string; message: string };

export type BedrockStep = { events: BedrockStreamItem[] } | { status: number; errorType: string; message: string };

export interface BedrockRequest {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export interface FakeBedrock {
  url: string;
  requests: BedrockRequest[];
  close(): Promise<void>;
}

export async function startFakeBedrock(steps: BedrockStep[]): Promise<FakeBedrock> {
  const queue = [...steps];
  const requests: BedrockRequest[] = [];
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream, headers) => {
    const parts: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => parts.push(chunk));
    stream.on('end', () => {
      const raw = Buffer.concat(parts).toString('utf8');
      requests.push({
        path: decodeURIComponent(String(headers[':path'] ?? '')),
        headers: Object.fromEntries(
          Object.entries(headers)
            .filter(([key]) => !key.startsWith(':'))
            .map(([key, value]) => [key, Array.isArray(value) ? value.join(', ') : String(value ?? '')]),
        ),
        body: raw ? (JSON.parse(raw) as Record<string, unknown>) : {},
      });
      const step = queue.shift() ?? { status: 500, errorType: 'InternalServerException', message: 'script exhausted' };
      if ('status' in step) {
        stream.respond({
          ':status': step.status,
          'content-type': 'application/json',
          'x-amzn-errortype': step.errorType,
        });
        stream.end(JSON.stringify({ message: step.message }));
        return;
      }
      stream.respond({ ':status': 200, 'content-type': 'application/vnd.amazon.eventstream' });
      for (const item of step.events) stream.write(encode(item));
      stream.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const session of sessions) session.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Events for a plain text answer, as Bedrock streams them. */
export function converseText(text: string, usage = { inputTokens: 12, outputTokens: 4 }): BedrockStreamItem[] {
  return [
    { event: 'messageStart', payload: { role: 'assistant' } },
    { event: 'contentBlockDelta', payload: { contentBlockIndex: 0, delta: { text } } },
    { event: 'contentBlockStop', payload: { contentBlockIndex: 0 } },
    { event: 'messageStop', payload: { stopReason: 'end_turn' } },
    {
      event: 'metadata',
      payload: { usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens }, metrics: { latencyMs: 5 } },
    },
  ];
}

/** One event-stream message: total length, headers length, prelude CRC, headers, payload, message CRC. */
function encode(item: BedrockStreamItem): Buffer {
  const headers =
    'event' in item
      ? { ':event-type': item.event, ':content-type': 'application/json', ':message-type': 'event' }
      : { ':exception-type': item.exception, ':content-type': 'application/json', ':message-type': 'exception' };
  const payload = Buffer.from(JSON.stringify('event' in item ? item.payload : { message: item.message }));
  const headerBytes = Buffer.concat(Object.entries(headers).map(([name, value]) => stringHeader(name, value)));
  const prelude = Buffer.alloc(8);
  prelude.writeUInt32BE(12 + headerBytes.length + payload.length + 4, 0);
  prelude.writeUInt32BE(headerBytes.length, 4);
  const message = Buffer.concat([prelude, crc(prelude), headerBytes, payload]);
  return Buffer.concat([message, crc(message)]);
}

/** name length (1 byte), name, type 7 (string), value length (2 bytes), value. */
function stringHeader(name: string, value: string): Buffer {
  const nameBytes = Buffer.from(name);
  const valueBytes = Buffer.from(value);
  const out = Buffer.alloc(1 + nameBytes.length + 3 + valueBytes.length);
  out.writeUInt8(nameBytes.length, 0);
  nameBytes.copy(out, 1);
  out.writeUInt8(7, 1 + nameBytes.length);
  out.writeUInt16BE(valueBytes.length, 2 + nameBytes.length);
  valueBytes.copy(out, 4 + nameBytes.length);
  return out;
}

function crc(bytes: Buffer): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(zlib.crc32(bytes), 0);
  return out;
}
