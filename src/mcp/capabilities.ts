/**
 * A server's tools, resources and prompts as registry tools, the way nanobot exposes them: each MCP tool as
 * `mcp_<server>_<tool>` with the server's input schema; each resource as a no-argument `mcp_<server>_resource_<name>`
 * that reads it; each prompt as `mcp_<server>_prompt_<name>` taking the prompt's (string) arguments.
 * Every call goes through the server's connection, which handles timeouts, reconnects and the single retry.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, Tool as McpToolDefinition, Prompt, Resource } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { JsonSchema } from '../tools/schema.js';
import { fail, type Tool, type ToolResult } from '../tools/types.js';
import { callToolResult, getPromptResult, readResourceResult } from './content.js';
import { type McpCapabilityKind, mcpToolName, type ToolFilter } from './names.js';
import { parametersFromJsonSchema } from './schema.js';

export interface ServerListing {
  tools: McpToolDefinition[];
  resources: Resource[];
  prompts: Prompt[];
}

/** What a wrapped capability needs from its server's connection. */
export interface McpCaller {
  /** Runs one request on the live client; reconnects and retries once when the connection was lost. */
  request<T>(run: (client: Client, options: RequestOptions) => Promise<T>, signal: AbortSignal): Promise<T>;
}

export interface McpTool extends Tool {
  readonly kind: McpCapabilityKind;
  /** Identifies the advertised definition, to tell a changed tool from an unchanged one on refresh. */
  readonly fingerprint: string;
}

export interface WrapOptions {
  server: string;
  caller: McpCaller;
  filter: ToolFilter;
}

export function wrapCapabilities(listing: ServerListing, options: WrapOptions): McpTool[] {
  const tools = listing.tools
    // A tool that only runs as a background task cannot be called with a plain tools/call.
    .filter((tool) => tool.execution?.taskSupport !== 'required' && options.filter.allowsTool(tool.name))
    .map((tool) => wrapTool(tool, options));
  // Resources and prompts have no names in enabledTools: any restriction leaves them out (as in nanobot).
  if (!options.filter.allowsAll) return tools;
  return [
    ...tools,
    ...listing.resources.map((resource) => wrapResource(resource, options)),
    ...listing.prompts.map((prompt) => wrapPrompt(prompt, options)),
  ];
}

function wrapTool(definition: McpToolDefinition, { server, caller }: WrapOptions): McpTool {
  const description = definition.description?.trim() || definition.title || definition.name;
  const name = mcpToolName(server, 'tool', definition.name);
  return {
    kind: 'tool',
    name,
    description,
    parameters: parametersFromJsonSchema(definition.inputSchema),
    concurrencySafe: definition.annotations?.readOnlyHint === true,
    fingerprint: JSON.stringify([description, definition.inputSchema]),
    execute: (args, ctx) =>
      settle(async () => {
        const result = await caller.request(
          (client, requestOptions) =>
            client.callTool({ name: definition.name, arguments: args }, undefined, requestOptions),
          ctx.signal,
        );
        return callToolResult(asCallToolResult(result), name);
      }),
  };
}

function wrapResource(resource: Resource, { server, caller }: WrapOptions): McpTool {
  const about = resource.description?.trim() || resource.title || resource.name;
  const description = `[MCP Resource] ${about}\nURI: ${resource.uri}`;
  const name = mcpToolName(server, 'resource', resource.name);
  return {
    kind: 'resource',
    name,
    description,
    parameters: z.object({}),
    concurrencySafe: true,
    fingerprint: JSON.stringify([description]),
    execute: (_args, ctx) =>
      settle(async () => {
        const result = await caller.request(
          (client, requestOptions) => client.readResource({ uri: resource.uri }, requestOptions),
          ctx.signal,
        );
        return readResourceResult(result, name);
      }),
  };
}

function wrapPrompt(prompt: Prompt, { server, caller }: WrapOptions): McpTool {
  const about = prompt.description?.trim() || prompt.title || prompt.name;
  const description = `[MCP Prompt] ${about}\nReturns a filled prompt template that can be used as a workflow guide.`;
  const properties: JsonSchema = {};
  const required: string[] = [];
  for (const argument of prompt.arguments ?? []) {
    properties[argument.name] = {
      type: 'string',
      ...(argument.description ? { description: argument.description } : {}),
    };
    if (argument.required) required.push(argument.name);
  }
  const inputSchema = { type: 'object', properties, required };
  return {
    kind: 'prompt',
    name: mcpToolName(server, 'prompt', prompt.name),
    description,
    parameters: parametersFromJsonSchema(inputSchema),
    concurrencySafe: true,
    fingerprint: JSON.stringify([description, inputSchema]),
    execute: (args, ctx) =>
      settle(async () => {
        const result = await caller.request(
          (client, requestOptions) =>
            client.getPrompt({ name: prompt.name, arguments: stringArguments(args) }, requestOptions),
          ctx.signal,
        );
        return getPromptResult(result);
      }),
  };
}

/** Failures (timeouts, a server that stays down, protocol errors) come back as error results with a clear message. */
async function settle(run: () => Promise<ToolResult>): Promise<ToolResult> {
  try {
    return await run();
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error));
  }
}

/** Servers on protocol 2024-10-07 may still answer with `toolResult`; show it as text. */
function asCallToolResult(result: Record<string, unknown>): CallToolResult {
  if (Array.isArray(result.content)) return result as CallToolResult;
  return { content: [{ type: 'text', text: JSON.stringify(result.toolResult ?? result) }] };
}

function stringArguments(args: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(args)) {
    if (value !== undefined) out[key] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return out;
}
