/**
 * What a server entry from the WebUI becomes in `tools.mcpServers`: the fields of nanobot's "custom server" form
 * (`settings.mcp.custom`) or of a pasted Claude Desktop / Cursor `mcpServers` block (`settings.mcp.import`),
 * checked here so that a bad entry is a 400 naming the field, never a server that fails later. Lists and maps may
 * come as JSON text (nanobot's form sends strings) or as JSON values.
 */
import { z } from 'zod';
import { WebuiApiError } from './api.js';

/** nanobot's server names: letters, digits, `-` and `_`, starting with a letter or digit, stored lowercased. */
const SERVER_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/i;
const TRANSPORTS: Readonly<Record<string, 'stdio' | 'sse' | 'streamableHttp'>> = {
  stdio: 'stdio',
  sse: 'sse',
  streamableHttp: 'streamableHttp',
  'streamable-http': 'streamableHttp',
  streamable_http: 'streamableHttp',
  http: 'streamableHttp',
};
const DEFAULT_TOOL_TIMEOUT_S = 30;
const MAX_LIST = 200;
const MAX_TEXT = 4096;
export const OAUTH_UNSUPPORTED =
  'MCP OAuth sign-in is not supported in this version; put a token in the server\'s headers (e.g. "Authorization": "Bearer …") instead';

/** One server as written to config.json (camelCase, as `nanobot` writes it). */
export interface McpServerEntry {
  type: 'stdio' | 'sse' | 'streamableHttp';
  command?: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  url?: string;
  headers: Record<string, string>;
  toolTimeout: number;
  enabledTools: string[];
}

export function serverName(value: unknown): string {
  if (typeof value !== 'string' || !SERVER_NAME.test(value.trim())) {
    throw new WebuiApiError(400, 'invalid MCP server name: use letters, digits, "-" or "_" (at most 64)');
  }
  const name = value.trim().toLowerCase();
  // `constructor`, `tostring`…: a key every object already has is a trap for any code that looks servers up.
  if (
    name in Object.prototype ||
    Object.getOwnPropertyNames(Object.prototype).some((key) => key.toLowerCase() === name)
  ) {
    throw new WebuiApiError(400, `"${name}" is reserved; choose another MCP server name`);
  }
  return name;
}

const text = z.string().max(MAX_TEXT);
const textList = z.array(text).max(MAX_LIST);
const textMap = z.record(z.string().max(256), text).refine((map) => Object.keys(map).length <= MAX_LIST);

/** A string list given as a JSON array, JSON text of one, or words separated by spaces. */
export function stringList(value: unknown, field: string): string[] {
  if (value === undefined || value === null || value === '') return [];
  let candidate: unknown = value;
  if (typeof value === 'string') {
    const trimmed = value.trim();
    if (trimmed.startsWith('[')) candidate = parseJson(trimmed, field);
    else if (/["'\\]/.test(trimmed)) {
      throw new WebuiApiError(400, `${field}: give quoted or escaped arguments as a JSON array of strings`);
    } else candidate = trimmed.split(/\s+/).filter(Boolean);
  }
  const parsed = textList.safeParse(candidate);
  if (!parsed.success) throw new WebuiApiError(400, `${field} must be a list of strings (at most ${MAX_LIST})`);
  return parsed.data.filter((item) => item.trim() !== '');
}

/** A string map given as a JSON object or JSON text of one; keys are trimmed, empty keys dropped. */
export function stringMap(value: unknown, field: string): Record<string, string> | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const candidate = typeof value === 'string' ? parseJson(value.trim(), field) : value;
  const parsed = textMap.safeParse(candidate);
  if (!parsed.success) throw new WebuiApiError(400, `${field} must be an object of string values`);
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(parsed.data)) if (key.trim()) out[key.trim()] = item;
  return out;
}

/** `enabled_tools`: `["*"]` when absent or when it holds `*` (every tool), else the names given. */
export function enabledTools(value: unknown): string[] {
  if (value === undefined || value === null || value === '') return ['*'];
  const names = stringList(value, 'enabled_tools');
  return names.includes('*') ? ['*'] : names;
}

function parseJson(raw: string, field: string): unknown {
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new WebuiApiError(400, `${field}: invalid JSON (${(error as Error).message})`);
  }
}

function optionalText(value: unknown, field: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string' || value.length > MAX_TEXT) throw new WebuiApiError(400, `${field} must be a string`);
  return value.trim();
}

function toolTimeout(value: unknown): number {
  if (value === undefined || value === null || value === '') return DEFAULT_TOOL_TIMEOUT_S;
  const seconds = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value.trim()) : value;
  if (typeof seconds !== 'number' || !Number.isInteger(seconds)) {
    throw new WebuiApiError(400, 'tool_timeout must be a whole number of seconds');
  }
  return Math.max(5, Math.min(seconds, 600));
}

/**
 * A server entry from the form's or an import's fields (both spellings: `tool_timeout`/`toolTimeout`, …).
 * `previous` is the stored entry of the same name: env and header values left empty keep what it has, so a form
 * that never shows secrets back can be saved without wiping them.
 */
export function serverEntry(
  fields: Readonly<Record<string, unknown>>,
  label: string,
  previous?: Readonly<Record<string, unknown>>,
): McpServerEntry {
  const command = optionalText(fields.command, `${label}: command`);
  const url = optionalText(fields.url, `${label}: url`);
  const rawType = optionalText(fields.type ?? fields.transport, `${label}: transport`);
  const type = rawType
    ? TRANSPORTS[rawType]
    : command
      ? 'stdio'
      : url.replace(/\/+$/, '').endsWith('/sse')
        ? 'sse'
        : 'streamableHttp';
  if (!type)
    throw new WebuiApiError(400, `${label}: unsupported MCP transport "${rawType}" (stdio, sse or streamableHttp)`);
  const auth = optionalText(fields.auth, `${label}: auth`).toLowerCase();
  if (auth === 'oauth') throw new WebuiApiError(501, OAUTH_UNSUPPORTED);
  if (auth) throw new WebuiApiError(400, `${label}: unsupported MCP auth type "${auth}"`);
  if (type === 'stdio' && !command) throw new WebuiApiError(400, `${label}: a stdio MCP server needs a command`);
  if (type !== 'stdio') {
    if (!url) throw new WebuiApiError(400, `${label}: a remote MCP server needs a URL`);
    if (!/^https?:\/\//i.test(url) || !URL.canParse(url)) {
      throw new WebuiApiError(400, `${label}: the URL must be http:// or https://`);
    }
  }
  const env = keepSecrets(stringMap(fields.env, `${label}: env`), previous?.env);
  const headers = keepSecrets(stringMap(fields.headers, `${label}: headers`), previous?.headers);
  const cwd = optionalText(fields.cwd, `${label}: cwd`);
  const entry: McpServerEntry = {
    type,
    args: type === 'stdio' ? stringList(fields.args, `${label}: args`) : [],
    env: type === 'stdio' ? env : {},
    headers: type === 'stdio' ? {} : headers,
    toolTimeout: toolTimeout(fields.tool_timeout ?? fields.toolTimeout),
    enabledTools: enabledTools(fields.enabled_tools ?? fields.enabledTools),
  };
  if (type === 'stdio') entry.command = command;
  else entry.url = url;
  if (type === 'stdio' && cwd) entry.cwd = cwd;
  return entry;
}

/** The given map, with empty values (and, when none is given at all, every entry) taken from the stored one. */
function keepSecrets(given: Record<string, string> | undefined, stored: unknown): Record<string, string> {
  const previous = stringValues(stored);
  if (given === undefined) return previous;
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(given)) {
    const kept = value === '' ? previous[key] : value;
    if (kept !== undefined && kept !== '') out[key] = kept;
  }
  return out;
}

function stringValues(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

/** The servers of a pasted config: `{mcpServers: {…}}` (Claude Desktop, Cursor) or the map itself. */
export function importedServers(value: unknown): Record<string, McpServerEntry> {
  const parsed = typeof value === 'string' ? parseJson(value.trim(), 'config') : value;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new WebuiApiError(400, 'MCP config must be a JSON object');
  }
  const root = parsed as Record<string, unknown>;
  const servers = Object.hasOwn(root, 'mcpServers') ? root.mcpServers : root;
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) {
    throw new WebuiApiError(400, 'MCP config must contain an mcpServers object');
  }
  const entries = Object.entries(servers);
  if (entries.length === 0) throw new WebuiApiError(400, 'MCP config contains no servers');
  if (entries.length > MAX_LIST) throw new WebuiApiError(400, `MCP config holds more than ${MAX_LIST} servers`);
  const out: Record<string, McpServerEntry> = {};
  for (const [rawName, fields] of entries) {
    const name = serverName(rawName);
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
      throw new WebuiApiError(400, `MCP server '${name}' must be an object`);
    }
    out[name] = serverEntry(fields as Record<string, unknown>, `MCP server '${name}'`);
  }
  return out;
}
