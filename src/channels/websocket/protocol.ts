/**
 * Client frames, validated (DESIGN §3: every boundary goes through zod). Three shapes are accepted, as in nanobot:
 * plain text, a legacy object with `content` / `text` / `message`, and typed envelopes (`{"type": …}`).
 * A frame that is none of these gets an `error` frame back; the connection stays open. Keys an envelope does not
 * use are ignored (nanobot's clients send many), and an error about a frame names its `chat_id` and `turn_id`
 * when it had them, so the client can tell which send failed.
 */
import { z } from 'zod';
import { CHAT_ID_PATTERN, type ClientEnvelope, TURN_ID_PATTERN } from './frames.js';

/** Longest message text accepted from a client (the frame size itself is capped by `maxMessageBytes`). */
export const MAX_CONTENT_CHARS = 100_000;
const TOO_LONG = `content is longer than ${MAX_CONTENT_CHARS} characters; split it, or upload it as a file with POST /api/uploads`;
/**
 * A frame over `maxMessageBytes` is answered with an `error` frame and the connection stays; only a frame past this
 * many times the limit makes the transport close the socket (1009), so a client cannot make the server buffer more.
 */
export const FRAME_CEILING_FACTOR = 4;

/** The error detail for a frame over the configured size, or undefined when it fits. */
export function oversizeDetail(bytes: number, maxMessageBytes: number): string | undefined {
  if (bytes <= maxMessageBytes) return undefined;
  return `frame of ${bytes} bytes is over channels.websocket.maxMessageBytes (${maxMessageBytes}); send files with POST /api/uploads`;
}
/** Attachments per message. */
export const MAX_MEDIA_PER_MESSAGE = 10;
/** Upload references are opaque ids the server minted. */
export const MEDIA_REF_PATTERN = /^[A-Za-z0-9_-]{16,64}$/;

const chatId = z.string().regex(CHAT_ID_PATTERN, 'invalid chat_id');
const content = z.string().max(MAX_CONTENT_CHARS, TOO_LONG);

const inlineAttachment = z.object({ data_url: z.string(), name: z.string().optional() });

const envelopeSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('new_chat') }),
  z.object({ type: z.literal('attach'), chat_id: chatId }),
  z.object({ type: z.literal('detach'), chat_id: chatId }),
  z.object({
    type: z.literal('message'),
    chat_id: chatId,
    content: content.default(''),
    media: z
      .array(z.union([z.string().regex(MEDIA_REF_PATTERN, 'invalid media reference'), inlineAttachment]))
      .max(MAX_MEDIA_PER_MESSAGE, `at most ${MAX_MEDIA_PER_MESSAGE} attachments per message`)
      .optional(),
    // A malformed turn id is replaced (nanobot does the same), never a reason to refuse the message.
    turn_id: z
      .unknown()
      .optional()
      .transform((value) => (typeof value === 'string' && TURN_ID_PATTERN.test(value) ? value : undefined)),
    webui: z
      .unknown()
      .optional()
      .transform((value) => value === true),
  }),
  // Voice input: checked field by field where it is handled (transcribe.ts), with nanobot's answers for each fault.
  z.looseObject({
    type: z.literal('transcribe_audio'),
    request_id: z.unknown().optional(),
    data_url: z.unknown().optional(),
    duration_ms: z.unknown().optional(),
  }),
  // Checked field by field where it is handled (webui-requests.ts), with nanobot's answers for each fault.
  z.looseObject({
    type: z.literal('webui_request'),
    request_id: z.unknown(),
    action: z.unknown(),
    payload: z.unknown(),
  }),
  // Checked where it is handled (fork.ts), with nanobot's error details.
  z.looseObject({
    type: z.literal('fork_chat'),
    source_chat_id: z.unknown().optional(),
    before_user_index: z.unknown().optional(),
    title: z.unknown().optional(),
  }),
]);

/**
 * nanobot's client frame types this gateway does not serve yet: answered with an error that says so (not "unknown
 * type"), naming the chat when the frame did.
 */
export const NOT_YET_SERVED: Record<string, string> = {
  new_temporary_chat: 'temporary chats are not supported by this gateway yet',
  discard_temporary_chat: 'temporary chats are not supported by this gateway yet',
  set_workspace_scope: 'per-chat workspace scopes are not supported by this gateway yet',
  set_sidebar_state: 'sidebar state is not stored by this gateway yet',
};

/** Text for the connection's default chat (a legacy frame). */
export interface LegacyText {
  type: 'text';
  content: string;
}

export type ClientFrame = ClientEnvelope | LegacyText;

/** Where an error about a frame belongs: the frame's own `chat_id` and `turn_id`, when it had well-formed ones. */
export interface FrameRef {
  chat_id?: string;
  turn_id?: string;
}

export type ParsedFrame = { ok: true; frame: ClientFrame } | ({ ok: false; detail: string } & FrameRef);

const KNOWN_TYPES = new Set([
  'new_chat',
  'attach',
  'detach',
  'message',
  'webui_request',
  'transcribe_audio',
  'fork_chat',
]);

function refOf(record: Record<string, unknown>): FrameRef {
  const ref: FrameRef = {};
  if (typeof record.chat_id === 'string' && CHAT_ID_PATTERN.test(record.chat_id)) ref.chat_id = record.chat_id;
  if (typeof record.turn_id === 'string' && TURN_ID_PATTERN.test(record.turn_id)) ref.turn_id = record.turn_id;
  return ref;
}

export function parseClientFrame(raw: string): ParsedFrame {
  const text = raw.trim();
  if (!text) return { ok: false, detail: 'empty frame' };
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    // Not JSON: plain text for the default chat.
    return legacy(text);
  }
  if (typeof data === 'string') return legacy(data);
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return { ok: false, detail: 'expected text, {"content": …} or a typed envelope {"type": …}' };
  }
  const record = data as Record<string, unknown>;
  if (record.type === undefined) {
    for (const key of ['content', 'text', 'message']) {
      const value = record[key];
      if (typeof value === 'string' && value.trim()) return legacy(value);
    }
    return { ok: false, detail: 'no text: send {"content": "…"}' };
  }
  const ref = refOf(record);
  if (typeof record.type === 'string' && Object.hasOwn(NOT_YET_SERVED, record.type)) {
    return { ok: false, detail: `${record.type}: ${NOT_YET_SERVED[record.type]}`, ...ref };
  }
  if (typeof record.type !== 'string' || !KNOWN_TYPES.has(record.type)) {
    return { ok: false, detail: `unknown type ${JSON.stringify(record.type)}`, ...ref };
  }
  const parsed = envelopeSchema.safeParse(record);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
    return { ok: false, detail: `${record.type}: ${where}${issue?.message ?? 'invalid envelope'}`, ...ref };
  }
  return { ok: true, frame: withoutEmpty(parsed.data) };
}

/** Drops the optional keys a client did not send, so a frame compares equal to what was meant. */
function withoutEmpty(frame: z.infer<typeof envelopeSchema>): ClientEnvelope {
  if (frame.type !== 'message') return frame;
  const { turn_id, webui, media, ...rest } = frame;
  return { ...rest, ...(media ? { media } : {}), ...(turn_id ? { turn_id } : {}), ...(webui ? { webui } : {}) };
}

function legacy(content: string): ParsedFrame {
  if (content.length > MAX_CONTENT_CHARS) {
    return { ok: false, detail: TOO_LONG };
  }
  if (!content.trim()) return { ok: false, detail: 'empty message' };
  return { ok: true, frame: { type: 'text', content } };
}
