/** Paths of the MCP servers the tests run, and small helpers around the manager. */
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { McpServerConfig } from '../../src/config/schema.js';
import type { ToolCall } from '../../src/providers/types.js';

const ROOT = join(import.meta.dirname, '..', '..');
export const EVERYTHING = join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
export const FILESYSTEM = join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
export const SCRIPTED = join(import.meta.dirname, 'fixtures', 'scripted-server.mjs');

/** A server entry with the schema's defaults filled in. */
export function serverConfig(fields: Partial<McpServerConfig>): McpServerConfig {
  return { args: [], env: {}, headers: {}, toolTimeout: 30, enabledTools: ['*'], ...fields };
}

export function toolCall(name: string, args: object = {}): ToolCall {
  return { id: `call_${name}`, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

export const context = () => ({ signal: new AbortController().signal });

/** A port nothing listens on right now (the server started next binds it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export async function waitFor(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
