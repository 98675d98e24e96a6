/**
 * MCP results as tool results for the model. Text stays text; images become image parts (as read_file does for a
 * PNG); embedded text resources are inlined under their URI; audio, binary blobs and resource links are described in
 * a line rather than pasted as base64. A call's `structuredContent` is shown as JSON when the server sent no text.
 * `isError` results become error results, so the model sees the failure as one.
 *
 * A server's words are third-party content, like a web page: every text part of a tool result or a resource read
 * (labels, descriptions and error text included) is inside an untrusted fence; images stay image parts. Prompt
 * results are not fenced: a prompt template is meant to be followed, and the model only gets one when it asks.
 */
import type {
  CallToolResult,
  ContentBlock,
  GetPromptResult,
  ReadResourceResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { ContentPart } from '../providers/types.js';
import { fenceUntrusted } from '../security/untrusted.js';
import type { ToolResult } from '../tools/types.js';

export const NO_OUTPUT = '(no output)';

type ResourceContents = ReadResourceResult['contents'][number];

/** `source` names where the content came from in the fence (the registry name of the tool, e.g. `mcp_docs_search`). */
export function callToolResult(result: CallToolResult, source = 'MCP tool'): ToolResult {
  const parts = result.content.flatMap(blockParts);
  if (result.structuredContent !== undefined && !parts.some((part) => part.type === 'text')) {
    parts.push({ type: 'text', text: JSON.stringify(result.structuredContent, null, 2) });
  }
  const content = fenceText(joinParts(parts), source);
  return result.isError ? { content: errorContent(content), isError: true } : { content };
}

export function readResourceResult(result: ReadResourceResult, source = 'MCP resource'): ToolResult {
  return {
    content: fenceText(joinParts(result.contents.flatMap((contents) => resourceParts(contents, false))), source),
  };
}

export function getPromptResult(result: GetPromptResult): ToolResult {
  const parts: ContentPart[] = [];
  if (result.description) parts.push({ type: 'text', text: result.description });
  for (const message of result.messages) {
    const blocks = blockParts(message.content);
    const first = blocks[0];
    // The role matters to whoever follows the prompt: "user: …" vs "assistant: …".
    if (first?.type === 'text') blocks[0] = { type: 'text', text: `${message.role}: ${first.text}` };
    parts.push(...blocks);
  }
  return { content: joinParts(parts) };
}

function blockParts(block: ContentBlock): ContentPart[] {
  switch (block.type) {
    case 'text':
      return [{ type: 'text', text: block.text }];
    case 'image':
      return [{ type: 'image_url', image_url: { url: `data:${block.mimeType || 'image/png'};base64,${block.data}` } }];
    case 'audio':
      return [{ type: 'text', text: `[audio (${block.mimeType}), ${base64Bytes(block.data)} bytes, not shown]` }];
    case 'resource':
      return resourceParts(block.resource, true);
    case 'resource_link': {
      const about = block.description ? ` — ${block.description}` : '';
      return [{ type: 'text', text: `[resource link: ${block.name} ${block.uri}${about}]` }];
    }
    default:
      return [{ type: 'text', text: JSON.stringify(block) }];
  }
}

function resourceParts(contents: ResourceContents, labelled: boolean): ContentPart[] {
  const mime = contents.mimeType ?? '';
  if ('text' in contents && typeof contents.text === 'string') {
    return [{ type: 'text', text: labelled ? `[resource ${contents.uri}]\n${contents.text}` : contents.text }];
  }
  if ('blob' in contents && typeof contents.blob === 'string') {
    if (mime.startsWith('image/'))
      return [{ type: 'image_url', image_url: { url: `data:${mime};base64,${contents.blob}` } }];
    const kind = mime ? ` (${mime})` : '';
    return [{ type: 'text', text: `[binary resource ${contents.uri}${kind}, ${base64Bytes(contents.blob)} bytes]` }];
  }
  return [{ type: 'text', text: `[resource ${contents.uri}]` }];
}

/** All-text results become one string (so long output is cut or saved like any tool's); images keep the array. */
function joinParts(parts: ContentPart[]): string | ContentPart[] {
  if (parts.length === 0) return NO_OUTPUT;
  if (parts.every((part) => part.type === 'text')) {
    const text = parts.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
    return text === '' ? NO_OUTPUT : text;
  }
  return parts;
}

/** Every text part from the server inside a fence of its own; our "(no output)" stays as it is. */
function fenceText(content: string | ContentPart[], source: string): string | ContentPart[] {
  if (typeof content === 'string') return content === NO_OUTPUT ? content : fenceUntrusted(content, source);
  return content.map((part) =>
    part.type === 'text' ? { type: 'text', text: fenceUntrusted(part.text, source) } : part,
  );
}

function errorContent(content: string | ContentPart[]): string | ContentPart[] {
  if (typeof content !== 'string') return content;
  return content === NO_OUTPUT ? 'The MCP tool reported an error without a message.' : content;
}

function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}
