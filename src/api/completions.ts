/**
 * The OpenAI chat-completions shapes: the request we accept, and the response and stream chunks we send back.
 * The agent answers one user message per request; how earlier messages count depends on `session_id`.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Usage } from '../providers/types.js';

const TextPart = z.object({ type: z.literal('text'), text: z.string() });
const ImagePart = z.object({
  type: z.literal('image_url'),
  image_url: z.union([z.string(), z.object({ url: z.string(), detail: z.string().optional() })]),
});
const MessageSchema = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(z.union([TextPart, ImagePart])), z.null()]).optional(),
});

export const ChatCompletionRequest = z.looseObject({
  model: z.string().optional(),
  messages: z.array(MessageSchema).min(1, 'messages must hold at least one message'),
  stream: z.boolean().optional(),
  session_id: z
    .string()
    .regex(/^[\w.:@-]{1,128}$/, 'session_id may hold letters, digits and . _ : @ - (at most 128)')
    .optional(),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;
type RequestMessage = z.infer<typeof MessageSchema>;

/** What one request asks of the agent. */
export interface ApiTurn {
  /** `api:<session_id>`; `api:default` when the request names none and carries no earlier messages. */
  sessionKey: string;
  /** True when the session exists for this request only (its earlier messages are the context). */
  ephemeral: boolean;
  text: string;
  /** `data:` URLs of attached images. */
  images: string[];
  /** Earlier messages, for an ephemeral session's history (user and assistant text only). */
  context: { role: 'user' | 'assistant'; content: string }[];
}

/** Maps a validated request to a turn; returns an error message when there is no user message to answer. */
export function toApiTurn(body: ChatCompletionRequest): ApiTurn | { error: string } {
  const lastUser = body.messages.findLastIndex((m) => m.role === 'user');
  const last = body.messages[lastUser];
  if (!last) return { error: 'messages must contain a user message: the agent answers the last one' };
  const { text, images } = splitContent(last);
  if (!text.trim() && images.length === 0) return { error: 'the last user message is empty' };
  const earlier = body.messages.slice(0, lastUser);
  if (body.session_id !== undefined) {
    return { sessionKey: `api:${body.session_id}`, ephemeral: false, text, images, context: [] };
  }
  if (earlier.length === 0) return { sessionKey: 'api:default', ephemeral: false, text, images, context: [] };
  return { sessionKey: `api:request-${randomUUID()}`, ephemeral: true, text, images, context: contextOf(earlier) };
}

function splitContent(message: RequestMessage): { text: string; images: string[] } {
  const { content } = message;
  if (typeof content === 'string') return { text: content, images: [] };
  const texts: string[] = [];
  const images: string[] = [];
  for (const part of content ?? []) {
    if (part.type === 'text') texts.push(part.text);
    else images.push(typeof part.image_url === 'string' ? part.image_url : part.image_url.url);
  }
  return { text: texts.join('\n'), images };
}

/** The client's instructions (system/developer) lead the context as a user note; tool messages are left out. */
function contextOf(messages: RequestMessage[]): ApiTurn['context'] {
  const out: ApiTurn['context'] = [];
  const instructions: string[] = [];
  for (const message of messages) {
    const { text } = splitContent(message);
    if (!text.trim()) continue;
    if (message.role === 'system' || message.role === 'developer') instructions.push(text);
    else if (message.role === 'user' || message.role === 'assistant') out.push({ role: message.role, content: text });
  }
  if (instructions.length > 0) {
    out.unshift({ role: 'user', content: `Instructions from the API client:\n${instructions.join('\n\n')}` });
  }
  return out;
}

export interface CompletionIds {
  id: string;
  created: number;
  model: string;
}

export function completionIds(model: string): CompletionIds {
  return { id: `chatcmpl-${randomUUID().replaceAll('-', '')}`, created: Math.floor(Date.now() / 1000), model };
}

function usageOf(usage: Usage) {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
  };
}

export function completionResponse(ids: CompletionIds, content: string, usage: Usage, finish: string) {
  return {
    id: ids.id,
    object: 'chat.completion',
    created: ids.created,
    model: ids.model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: finish }],
    usage: usageOf(usage),
  };
}

export type ChunkDelta = { role?: 'assistant'; content?: string; reasoning_content?: string };

export function completionChunk(ids: CompletionIds, delta: ChunkDelta, finish: string | null = null, usage?: Usage) {
  return {
    id: ids.id,
    object: 'chat.completion.chunk',
    created: ids.created,
    model: ids.model,
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...(usage ? { usage: usageOf(usage) } : {}),
  };
}

/** OpenAI's error body: `{ error: { message, type, code } }`. */
export function errorBody(message: string, type: string, code: string | null = null) {
  return { error: { message, type, param: null, code } };
}
