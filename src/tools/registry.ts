/**
 * The tool registry: advertises tool definitions (sorted, cached, byte-stable for prompt caching) and
 * executes model tool calls. `execute` never throws; unknown tools, bad JSON, invalid parameters and tool
 * exceptions all come back as error results the model can read and recover from.
 */
import type { ContentPart, ToolCall, ToolDefinition } from '../providers/types.js';
import { redactSecrets } from '../security/secrets.js';
import type { ResultSpill } from './result-spill.js';
import {
  applyAliases,
  argumentAliases,
  coerceToSchema,
  describeIssues,
  type JsonSchema,
  publicJsonSchema,
  rawJsonSchema,
} from './schema.js';
import type { AnyToolSchema, Tool, ToolContext, ToolResult } from './types.js';

/** Appended to every error result: measurably raises how often models recover instead of repeating. */
export const ERROR_RECOVERY_HINT = '\n\n[Analyze the error above and try a different approach.]';
export const DEFAULT_MAX_RESULT_CHARS = 16_000;

export interface ToolRegistryOptions {
  /** Text longer than this is cut, with a note on how to read the rest. Default 16000. */
  maxResultChars?: number;
  /** Where over-long successful text results are saved in full (the model gets a preview and the path). */
  spill?: ResultSpill;
  /**
   * The configured secret values (API keys, channel tokens…), asked for on each call. Every result — text, error,
   * exception — is masked against them and the known secret shapes before the model reads it (a failing MCP server
   * may quote its token or print it to stderr). Without it results pass unmasked (unit tests, internal registries).
   */
  secrets?: () => Iterable<string>;
}

interface RegisteredTool {
  tool: Tool;
  /** The tool's schema with unknown keys rejected, so typos are reported instead of ignored. */
  strictSchema: AnyToolSchema;
  rawSchema: JsonSchema;
  aliases: Map<string, string>;
}

export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();
  private readonly maxResultChars: number;
  private readonly spill: ResultSpill | undefined;
  private readonly secrets: (() => Iterable<string>) | undefined;
  private cachedDefinitions: ToolDefinition[] | undefined;

  constructor(options: ToolRegistryOptions = {}) {
    this.maxResultChars = options.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS;
    this.spill = options.spill;
    this.secrets = options.secrets;
  }

  /** Adds a tool; a second tool with the same name is a programmer error. */
  register(tool: Tool): void {
    if (this.tools.has(tool.name)) throw new Error(`Tool '${tool.name}' is already registered`);
    const rawSchema = rawJsonSchema(tool.parameters);
    this.tools.set(tool.name, {
      tool,
      strictSchema: tool.parameters.strict(),
      rawSchema,
      aliases: argumentAliases(rawSchema),
    });
    this.cachedDefinitions = undefined;
  }

  unregister(name: string): boolean {
    const removed = this.tools.delete(name);
    if (removed) this.cachedDefinitions = undefined;
    return removed;
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name)?.tool;
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  /** Tool names in definition order: built-ins sorted, then MCP tools (`mcp_*`) sorted. */
  names(): string[] {
    const isMcp = (name: string) => name.startsWith('mcp_');
    return [...this.tools.keys()].sort((a, b) => Number(isMcp(a)) - Number(isMcp(b)) || (a < b ? -1 : a > b ? 1 : 0));
  }

  /** Definitions for the model, in a stable order and cached until the set of tools changes. */
  definitions(): ToolDefinition[] {
    this.cachedDefinitions ??= this.names().map((name) => {
      const { tool, rawSchema } = this.tools.get(name) as RegisteredTool;
      return {
        type: 'function' as const,
        function: { name, description: tool.description, parameters: publicJsonSchema(rawSchema) },
      };
    });
    return this.cachedDefinitions;
  }

  isConcurrencySafe(name: string): boolean {
    return this.tools.get(name)?.tool.concurrencySafe === true;
  }

  async execute(call: ToolCall, ctx: ToolContext): Promise<ToolResult> {
    const name = call.function.name;
    const entry = this.tools.get(name);
    if (!entry) return this.errorResult(this.notFoundMessage(name));
    if (ctx.signal.aborted) return this.errorResult(`Error: Tool '${name}' was cancelled before it ran.`);

    const parsed = parseArguments(call.function.arguments);
    if (!parsed.ok) return this.errorResult(`Error: Invalid parameters for tool '${name}': ${parsed.error}`);
    const args = coerceToSchema(applyAliases(parsed.value, entry.aliases), entry.rawSchema);

    const validation = entry.strictSchema.safeParse(args);
    if (!validation.success) {
      const allowed = Object.keys(entry.tool.parameters.shape);
      const detail = describeIssues(validation.error, args, allowed);
      return this.errorResult(`Error: Invalid parameters for tool '${name}': ${detail}`);
    }

    let raw: ToolResult;
    try {
      raw = await entry.tool.execute(validation.data, ctx);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return this.errorResult(`Error executing ${name}: ${message}`);
    }
    const result = { ...raw, content: this.redact(raw.content) };
    if (result.isError) return this.errorResult(result.content);
    // read_file pages by itself (offset/limit); saving its output would only produce another file to page through.
    const text = typeof result.content === 'string' && name !== 'read_file' ? result.content : undefined;
    if (this.spill && text !== undefined && text.length > this.maxResultChars) {
      const preview = await this.spill.spill(text, name);
      if (preview) return { ...result, content: preview };
    }
    return { ...result, content: this.truncate(result.content) };
  }

  /** Masks configured secrets and secret shapes in every text (before truncation, so no cut half survives). */
  private redact(content: string | ContentPart[]): string | ContentPart[] {
    if (!this.secrets) return content;
    const secrets = [...this.secrets()];
    if (typeof content === 'string') return redactSecrets(content, secrets);
    return content.map((part) => (part.type === 'text' ? { ...part, text: redactSecrets(part.text, secrets) } : part));
  }

  private errorResult(content: string | ContentPart[]): ToolResult {
    const truncated = this.truncate(this.redact(content));
    if (typeof truncated === 'string') {
      const text = truncated.startsWith('Error') ? truncated : `Error: ${truncated}`;
      return { content: text.endsWith(ERROR_RECOVERY_HINT) ? text : text + ERROR_RECOVERY_HINT, isError: true };
    }
    return { content: [...truncated, { type: 'text', text: ERROR_RECOVERY_HINT.trimStart() }], isError: true };
  }

  private notFoundMessage(name: string): string {
    const available = this.names();
    const suggestions = closestNames(name, available);
    if (suggestions.length > 0) {
      const quoted = suggestions.map((s) => `'${s}'`);
      const options = quoted.length === 1 ? quoted[0] : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`;
      return `Error: Tool '${name}' not found. Did you mean ${options}?`;
    }
    return `Error: Tool '${name}' not found. Available tools: ${available.join(', ') || '(none)'}.`;
  }

  private truncate(content: string | ContentPart[]): string | ContentPart[] {
    if (typeof content === 'string') return truncateText(content, this.maxResultChars);
    let budget = this.maxResultChars;
    return content.map((part) => {
      if (part.type !== 'text') return part;
      const text = truncateText(part.text, Math.max(budget, 0));
      budget -= part.text.length;
      return { type: 'text', text };
    });
  }
}

type ParsedArguments = { ok: true; value: JsonSchema } | { ok: false; error: string };

/** Lenient: empty → {}, a ```json fence is stripped, a double-encoded JSON string is decoded once more. */
export function parseArguments(raw: string | undefined): ParsedArguments {
  let text = (raw ?? '').trim();
  const fenced = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(text);
  if (fenced) text = fenced[1] ?? '';
  if (text === '' || text === 'null') return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
    if (typeof value === 'string' && value.trim().startsWith('{')) value = JSON.parse(value);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { ok: false, error: `the arguments were not valid JSON (${reason}). Send a single JSON object.` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: 'the arguments must be a JSON object of named parameters.' };
  }
  return { ok: true, value: value as JsonSchema };
}

const normaliseName = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]/g, '');

export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/** Up to three names close to `name`: same normalised spelling, a substring, or a small edit distance. */
export function closestNames(name: string, candidates: string[]): string[] {
  const wanted = normaliseName(name);
  if (wanted === '') return [];
  const scored = candidates
    .map((candidate) => {
      const normalised = normaliseName(candidate);
      if (normalised === wanted) return { candidate, score: 0 };
      const distance = editDistance(wanted, normalised);
      const contains = wanted.length >= 3 && (normalised.includes(wanted) || wanted.includes(normalised));
      const limit = Math.max(2, Math.floor(Math.max(wanted.length, normalised.length) / 3));
      return { candidate, score: distance <= limit ? distance : contains ? limit : Number.POSITIVE_INFINITY };
    })
    .filter((entry) => Number.isFinite(entry.score))
    .sort((a, b) => a.score - b.score || a.candidate.localeCompare(b.candidate));
  return scored.slice(0, 3).map((entry) => entry.candidate);
}

/** Keeps the head of an over-long text and says how much was cut and how to get at it. */
export function truncateText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let cut = maxChars;
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut--; // do not split a surrogate pair
  const omitted = text.length - cut;
  return (
    `${text.slice(0, cut)}\n\n[... ${omitted} more characters omitted (the result had ${text.length}). ` +
    'To read the rest, ask for a smaller piece: use offset/limit when reading files, or narrow the command or ' +
    'search (e.g. pipe through head, tail or grep).]'
  );
}
