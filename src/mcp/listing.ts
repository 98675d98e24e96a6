/**
 * Everything a server offers, all pages of it. Tools must list; resources and prompts are optional extras (only
 * asked for when the server declares them and enabledTools allows everything), so their failure is only logged.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Logger } from '../util/log.js';
import type { ServerListing } from './capabilities.js';

/** Guards against a server that keeps handing out cursors. */
const MAX_PAGES = 100;

export async function listCapabilities(
  client: Client,
  includeExtras: boolean,
  options: RequestOptions,
  log: Logger,
  server: string,
): Promise<ServerListing> {
  const capabilities = client.getServerCapabilities() ?? {};
  const tools = capabilities.tools
    ? await allPages(async (cursor) => {
        const page = await client.listTools(cursor ? { cursor } : {}, options);
        return { items: page.tools, next: page.nextCursor };
      })
    : [];
  const optional = async <T>(what: string, list: () => Promise<T[]>): Promise<T[]> => {
    try {
      return await list();
    } catch (error) {
      log.debug(`MCP server '${server}': listing ${what} failed: ${error instanceof Error ? error.message : error}`);
      return [];
    }
  };
  const [resources, prompts] = await Promise.all([
    includeExtras && capabilities.resources
      ? optional('resources', () =>
          allPages(async (cursor) => {
            const page = await client.listResources(cursor ? { cursor } : {}, options);
            return { items: page.resources, next: page.nextCursor };
          }),
        )
      : [],
    includeExtras && capabilities.prompts
      ? optional('prompts', () =>
          allPages(async (cursor) => {
            const page = await client.listPrompts(cursor ? { cursor } : {}, options);
            return { items: page.prompts, next: page.nextCursor };
          }),
        )
      : [],
  ]);
  return { tools, resources, prompts };
}

async function allPages<T>(fetchPage: (cursor?: string) => Promise<{ items: T[]; next?: string | undefined }>) {
  const items: T[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await fetchPage(cursor);
    items.push(...result.items);
    if (!result.next || seen.has(result.next)) return items;
    seen.add(result.next);
    cursor = result.next;
  }
  return items;
}
