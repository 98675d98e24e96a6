/**
 * OneBot v11 messages: a message is either an array of segments (`{type, data}`) or a string with CQ codes
 * (`hello [CQ:at,qq=123] [CQ:image,file=a.png,url=…]`), depending on the implementation's `messagePostFormat`.
 * Both are read into segments here; what we send is always the array form, whose `text` segments are literal, so
 * a reply that contains `[CQ:at,qq=all]` reaches the chat as those characters and never as a code.
 */
import { z } from 'zod';

export interface Segment {
  type: string;
  data: Record<string, string>;
}

/** Segment data values are strings in v11, but implementations send numbers (qq, id, file_size) too. */
const scalar = z.union([z.string(), z.number(), z.boolean()]).transform(String);
const segmentSchema = z.looseObject({
  type: z.string(),
  data: z.record(z.string(), z.unknown()).nullish(),
});

/** The message of an event, in either form, as segments (malformed segments are dropped, not fatal). */
export function readMessage(message: unknown): Segment[] {
  if (typeof message === 'string') return parseCqString(message);
  if (!Array.isArray(message)) return [];
  const out: Segment[] = [];
  for (const item of message) {
    const parsed = segmentSchema.safeParse(item);
    if (!parsed.success) continue;
    const data: Record<string, string> = {};
    for (const [key, value] of Object.entries(parsed.data.data ?? {})) {
      const text = scalar.safeParse(value);
      if (text.success) data[key] = text.data;
    }
    out.push({ type: parsed.data.type, data });
  }
  return out;
}

const CQ_CODE = /\[CQ:([A-Za-z0-9_.-]+)((?:,[^,\]]*)*)\]/g;

/** A CQ-code string → segments: text between codes is unescaped, each code's parameters too. */
export function parseCqString(input: string): Segment[] {
  const out: Segment[] = [];
  let at = 0;
  for (const match of input.matchAll(CQ_CODE)) {
    const index = match.index ?? 0;
    if (index > at) out.push(textSegment(unescapeText(input.slice(at, index))));
    const data: Record<string, string> = {};
    for (const pair of (match[2] ?? '').split(',').slice(1)) {
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      data[pair.slice(0, eq)] = unescapeParam(pair.slice(eq + 1));
    }
    out.push({ type: match[1] ?? 'text', data });
    at = index + match[0].length;
  }
  if (at < input.length) out.push(textSegment(unescapeText(input.slice(at))));
  return out;
}

/** Text as a CQ-code string would carry it: `&`, `[` and `]` escaped, so it can never open a code. */
export function escapeCqText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/\[/g, '&#91;').replace(/\]/g, '&#93;');
}

function unescapeText(text: string): string {
  return text.replace(/&#91;/g, '[').replace(/&#93;/g, ']').replace(/&amp;/g, '&');
}

function unescapeParam(text: string): string {
  return unescapeText(text.replace(/&#44;/g, ','));
}

export const textSegment = (text: string): Segment => ({ type: 'text', data: { text } });

/** What a message says, for the agent. */
export interface ReadSegments {
  text: string;
  /** The bot's own QQ number was @mentioned (`at` with its self_id; `at` all is not a mention). */
  mentionsBot: boolean;
  /** The message id a `reply` segment quotes. */
  replyTo?: string;
  media: MediaSegment[];
}

export interface MediaSegment {
  kind: 'image' | 'audio' | 'video' | 'file';
  /** An http(s) URL the implementation gave, if any. */
  url?: string;
  name?: string;
  size?: number;
  /** The implementation's file id (`file_id`, or `file` for images), for `get_file`/`get_image` where no URL came. */
  fileId?: string;
}

const MEDIA_KIND: Record<string, MediaSegment['kind']> = {
  image: 'image',
  record: 'audio',
  video: 'video',
  file: 'file',
};

export function summarize(segments: readonly Segment[], selfId: string): ReadSegments {
  const parts: string[] = [];
  const media: MediaSegment[] = [];
  let mentionsBot = false;
  let replyTo: string | undefined;
  for (const { type, data } of segments) {
    const kind = MEDIA_KIND[type];
    if (type === 'text') parts.push(data.text ?? '');
    else if (type === 'at') {
      if (selfId !== '' && data.qq === selfId) mentionsBot = true;
      else parts.push(data.qq === 'all' ? '@all' : `@${data.name || data.qq || ''}`);
    } else if (type === 'reply') replyTo = data.id || undefined;
    else if (type === 'face') parts.push(`[face:${data.id ?? ''}]`);
    else if (kind) media.push(mediaOf(kind, data));
  }
  const text = parts.join('').trim();
  return { text, mentionsBot, ...(replyTo ? { replyTo } : {}), media };
}

function mediaOf(kind: MediaSegment['kind'], data: Record<string, string>): MediaSegment {
  const url = [data.url, data.file].find((value) => value && /^https?:\/\//i.test(value));
  const size = Number(data.file_size ?? data.size);
  const name = data.name || data.file_name || (data.file && !/^[a-z]+:\/\//i.test(data.file) ? data.file : undefined);
  const fileId = data.file_id || (data.file && !/^[a-z]+:\/\//i.test(data.file) ? data.file : undefined);
  return {
    kind,
    ...(url ? { url } : {}),
    ...(name ? { name } : {}),
    ...(Number.isFinite(size) && size > 0 ? { size } : {}),
    ...(fileId ? { fileId } : {}),
  };
}
