/**
 * Session files → what the WebUI shows: user and assistant turns with reasoning and tool calls (each matched with
 * its result), without the runtime block the agent appends to user messages.
 */
import { basename } from 'node:path';
import type { ChatMessage, MessageContent } from '../../providers/types.js';
import { publicContent, stripRuntimeContext } from '../../session/runtime-context.js';
import type { Session } from '../../session/types.js';
import type { HistoryEntry, HistoryToolCall } from './frames.js';
import { preview } from './turn-events.js';

const TITLE_CHARS = 60;
const ATTACHMENT_LINE = /^\[(?:image|file): (.+)\]$/;

export function sessionTitle(session: Session): string {
  const title = session.metadata.title;
  if (typeof title === 'string' && title.trim()) return title.trim();
  const firstUser = session.messages.find((m) => m.role === 'user');
  const text = firstUser ? userText(publicContent(firstUser)).text.replace(/\s+/g, ' ').trim() : '';
  if (!text) return 'New chat';
  return text.length > TITLE_CHARS ? `${text.slice(0, TITLE_CHARS - 1)}…` : text;
}

export function historyEntries(messages: readonly ChatMessage[]): HistoryEntry[] {
  const entries: HistoryEntry[] = [];
  const pending = new Map<string, HistoryToolCall>();
  let assistant: Extract<HistoryEntry, { role: 'assistant' }> | undefined;
  for (const message of messages) {
    if (message.role === 'user') {
      const { text, media } = userText(publicContent(message));
      entries.push(media.length ? { role: 'user', text, media } : { role: 'user', text });
      assistant = undefined;
    } else if (message.role === 'assistant') {
      // One assistant entry per user turn: tool rounds and the final answer fold together, as the chat shows them.
      if (!assistant) {
        assistant = { role: 'assistant', text: '', tools: [] };
        entries.push(assistant);
      }
      const text = plainText(message.content);
      if (text) assistant.text = assistant.text ? `${assistant.text}\n\n${text}` : text;
      if (message.reasoning_content) {
        assistant.reasoning = [assistant.reasoning, message.reasoning_content].filter(Boolean).join('\n\n');
      }
      for (const call of message.tool_calls ?? []) {
        const tool: HistoryToolCall = {
          id: call.id,
          name: call.function.name,
          arguments: preview(call.function.arguments),
        };
        assistant.tools.push(tool);
        pending.set(call.id, tool);
      }
    } else if (message.role === 'tool' && message.tool_call_id) {
      const tool = pending.get(message.tool_call_id);
      if (!tool) continue;
      const result = plainText(message.content);
      tool.result = preview(result);
      tool.is_error = /^error\b/i.test(result);
      pending.delete(message.tool_call_id);
    }
  }
  return entries;
}

function plainText(content: MessageContent, separator = '\n'): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content
    .filter((part) => part.type === 'text')
    .map((part) => part.text)
    .join(separator);
}

/** The user's words and the names of the files they attached (`[image: /path]` lines). */
function userText(content: MessageContent): { text: string; media: string[] } {
  const media: string[] = [];
  const lines = stripRuntimeContext(plainText(content, '\n\n'))
    .split('\n')
    .filter((line) => {
      const match = ATTACHMENT_LINE.exec(line.trim());
      if (match?.[1]) media.push(basename(match[1]));
      return !match;
    });
  return { text: lines.join('\n').trim(), media };
}
