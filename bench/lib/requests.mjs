// What an agent sends the model: size, estimated tokens, and how much of a request the next one repeats byte for byte.
import { countTokens } from 'gpt-tokenizer';

function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('\n');
}

/**
 * Tokens the model reads (o200k_base, as counted by gpt-tokenizer): each message's text and tool calls, plus the tool
 * schemas, plus ~4 tokens of chat framing per message. An estimate: providers template these slightly differently.
 */
export function estimateTokens(body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  let tokens = body.tools ? countTokens(JSON.stringify(body.tools)) : 0;
  for (const message of messages) {
    tokens += 4 + countTokens(textOf(message.content));
    if (message.tool_calls) tokens += countTokens(JSON.stringify(message.tool_calls));
  }
  return tokens;
}

/** The system prompt(s) and the tool schemas of a request, in bytes. */
export function anatomy(body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const system = messages.filter((m) => m.role === 'system' || m.role === 'developer');
  return {
    systemBytes: system.reduce((sum, m) => sum + Buffer.byteLength(textOf(m.content)), 0),
    toolCount: Array.isArray(body.tools) ? body.tools.length : 0,
    toolBytes: body.tools ? Buffer.byteLength(JSON.stringify(body.tools)) : 0,
  };
}

/**
 * A request as the provider lays it out for its prompt cache: tool schemas first, then the messages in order, each
 * serialised as the agent sent it. A prefix shared by two of these is what a prompt cache can reuse.
 */
export function promptBytes(body) {
  const parts = [JSON.stringify(body.tools ?? [])];
  for (const message of body.messages ?? []) parts.push(JSON.stringify(message));
  return Buffer.from(parts.join('\n'));
}

/** Share (0–100) of `previous` that `next` repeats byte for byte from the start. */
export function prefixShare(previous, next) {
  const limit = Math.min(previous.length, next.length);
  let i = 0;
  while (i < limit && previous[i] === next[i]) i++;
  return previous.length ? (100 * i) / previous.length : 100;
}
