/** The fake Feishu Open Platform's wire details: request parsing, protobuf frames, and Feishu's checks on messages. */
import type http from 'node:http';
import protobuf from 'protobufjs';
import { renderMarkdown } from '../../../src/channels/markup/render.js';
import { jsonBody, readRequest } from '../../helpers/multipart.js';
import type { BotMessage, FakeFailure } from './fake-open-platform.js';

// The SDK declares SeqID and LogID as uint64; uint32 reads the same varints (the ids here are small) and keeps
// protobufjs from needing the optional `long` package.
const { root } = protobuf.parse(`syntax="proto2"; package pbbp2;
message Header { required string key=1; required string value=2; }
message Frame { required uint32 SeqID=1; required uint32 LogID=2; required int32 service=3; required int32 method=4;
  repeated Header headers=5; optional string payloadEncoding=6; optional string payloadType=7; optional bytes payload=8;
  optional string LogIDNew=9; }`);
export const Frame = root.lookupType('pbbp2.Frame');

export const CARD_LIMIT = 30 * 1024;
export const TEXT_LIMIT = 150 * 1024;

export function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** JSON bodies, and multipart bodies (uploads): fields become the body, file parts are recorded by name and size. */
export async function readBody(req: http.IncomingMessage): Promise<{
  body: Record<string, unknown>;
  files: Record<string, { name: string; size: number }>;
}> {
  const { raw, parts } = await readRequest(req);
  if (!parts) return { body: jsonBody(raw), files: {} };
  const body: Record<string, unknown> = {};
  const files: Record<string, { name: string; size: number }> = {};
  for (const part of parts) {
    // The SDK uploads a Buffer as a part with a content type but no file name.
    if (part.filename !== undefined || /content-type:/i.test(part.headers)) {
      files[part.name] = { name: part.filename ?? '', size: part.content.length };
    } else body[part.name] = part.content.toString('utf8');
  }
  return { body, files };
}

/** The text a user reads: a card's Markdown rendered, a text message as it is. */
export function visibleOf(message: BotMessage): string {
  return message.msgType === 'interactive' ? visibleMarkdown(message.text) : message.text;
}

export function visibleMarkdown(markdown: string): string {
  return renderMarkdown(markdown, 'plain');
}

/**
 * Throws when a card with this Markdown would be refused (over 30 KB with its JSON escaping) or would show
 * wrongly: a code block left open swallows everything after it.
 */
export function assertValidCardMarkdown(markdown: string): void {
  const bytes = Buffer.byteLength(
    JSON.stringify(JSON.stringify({ schema: '2.0', body: { elements: [{ markdown }] } })),
  );
  if (bytes > 30 * 1024) throw new Error(`card is ${bytes} bytes, over Feishu's 30 KB`);
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,})/.exec(line)?.[1];
    if (!marker) continue;
    if (!fence) fence = marker;
    else if (line.trim() === fence) fence = undefined;
  }
  if (fence) throw new Error('a code block is left open');
  if (/\]\(</.test(markdown)) throw new Error('a link in the [text](<url>) form, which Feishu cards do not read');
}

export function encodeFrame(method: number, headers: { key: string; value: string }[], payload: unknown): Buffer {
  const message = Frame.create({
    SeqID: 1,
    LogID: 1,
    service: 1,
    method,
    headers,
    payload: Buffer.from(JSON.stringify(payload)),
  });
  return Buffer.from(Frame.encode(message).finish());
}

/** Feishu's checks on a message `content`: what it refuses, with its error codes. */
export function checkContent(msgType: string, content: string, patch: boolean): FakeFailure | undefined {
  const bad = (msg: string): FakeFailure => ({
    status: 400,
    code: 230099,
    msg: `Failed to create card content: ${msg}`,
  });
  const limit = msgType === 'text' ? TEXT_LIMIT : CARD_LIMIT;
  if (Buffer.byteLength(JSON.stringify(content)) + 200 > limit) {
    return { status: 400, code: 230025, msg: 'The length of the message content reaches its limit.' };
  }
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(content) as Record<string, unknown>;
  } catch {
    return { status: 400, code: 230001, msg: 'invalid message content: not JSON' };
  }
  if (msgType === 'text') {
    return typeof parsed.text === 'string' && parsed.text.trim()
      ? undefined
      : { status: 400, code: 230001, msg: 'empty text' };
  }
  if (msgType !== 'interactive') return undefined;
  const config = parsed.config as { update_multi?: unknown } | undefined;
  if (patch && config?.update_multi !== true) return bad('only shared cards (update_multi) can be updated');
  if (parsed.schema !== '2.0') return bad('expected a JSON 2.0 card');
  const elements = (parsed.body as { elements?: unknown } | undefined)?.elements;
  if (!Array.isArray(elements) || elements.length === 0) return bad('body.elements is empty');
  for (const element of elements as Record<string, unknown>[]) {
    const text = element.text as { tag?: unknown; content?: unknown } | undefined;
    const valid =
      (element.tag === 'markdown' && typeof element.content === 'string' && element.content.trim() !== '') ||
      (element.tag === 'div' && text?.tag === 'plain_text' && typeof text.content === 'string');
    if (!valid) return bad(`unsupported element ${JSON.stringify(element).slice(0, 80)}`);
  }
  return undefined;
}

export function shownText(msgType: string, content: string): string {
  const parsed = JSON.parse(content) as Record<string, unknown>;
  if (msgType === 'text') return String(parsed.text);
  if (msgType === 'interactive') {
    const elements = (parsed.body as { elements: Record<string, unknown>[] }).elements;
    return elements
      .map((e) => (e.tag === 'markdown' ? String(e.content) : String((e.text as { content: string }).content)))
      .join('\n');
  }
  if (msgType === 'image') return `[image ${String(parsed.image_key)}]`;
  return `[${msgType} ${String(parsed.file_key)}]`;
}
