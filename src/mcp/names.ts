/**
 * Tool names for MCP capabilities, as nanobot makes them: `mcp_<server>_<tool>`, `mcp_<server>_resource_<name>`,
 * `mcp_<server>_prompt_<name>`. Providers accept only [a-zA-Z0-9_-] and at most 64 characters, so everything else
 * becomes `_` (runs collapsed) and an over-long name keeps its head plus a short hash of the whole, which keeps two
 * long names that differ only at the end apart.
 */
import { createHash } from 'node:crypto';

export const MAX_TOOL_NAME_LENGTH = 64;
const HASH_LENGTH = 8;

export type McpCapabilityKind = 'tool' | 'resource' | 'prompt';

export function sanitiseName(name: string): string {
  return name.replace(/[^a-zA-Z0-9_-]/g, '_').replace(/_+/g, '_');
}

/** Short names stay as they are; longer ones become `<head>_<8 hex of sha1(name)>`, exactly `max` long. */
export function limitName(name: string, max = MAX_TOOL_NAME_LENGTH): string {
  if (name.length <= max) return name;
  const digest = createHash('sha1').update(name, 'utf8').digest('hex').slice(0, HASH_LENGTH);
  return `${name.slice(0, max - HASH_LENGTH - 1)}_${digest}`;
}

/** The name the model sees for one capability of one server. */
export function mcpToolName(server: string, kind: McpCapabilityKind, name: string): string {
  const middle = kind === 'tool' ? '' : `${kind}_`;
  return limitName(sanitiseName(`mcp_${server}_${middle}${name}`));
}

/**
 * nanobot's `enabledTools`: `["*"]` (the default) allows every tool plus the server's resources and prompts; any
 * other list allows only the tools it names, by their raw MCP name or the wrapped `mcp_<server>_<tool>` name, and no
 * resources or prompts; `[]` allows nothing.
 */
export class ToolFilter {
  private readonly entries: Set<string>;
  private readonly matched = new Set<string>();
  readonly allowsAll: boolean;

  constructor(
    private readonly server: string,
    enabledTools: readonly string[],
  ) {
    this.entries = new Set(enabledTools);
    this.allowsAll = this.entries.has('*');
  }

  allowsTool(rawName: string): boolean {
    if (this.allowsAll) return true;
    const wrapped = mcpToolName(this.server, 'tool', rawName);
    let allowed = false;
    for (const candidate of [rawName, wrapped]) {
      if (!this.entries.has(candidate)) continue;
      this.matched.add(candidate);
      allowed = true;
    }
    return allowed;
  }

  /** Entries that named no tool of the server (checked after every tool went through allowsTool). */
  unmatched(): string[] {
    if (this.allowsAll) return [];
    return [...this.entries].filter((entry) => !this.matched.has(entry)).sort();
  }
}
