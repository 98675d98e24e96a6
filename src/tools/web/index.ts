/** The web tools (web_search, web_fetch); both take the network policy that guards every request they make. */
export {
  createWebFetchTool,
  DEFAULT_FETCH_MAX_CHARS,
  type JinaReaderOptions,
  type WebFetchPayload,
  type WebFetchToolOptions,
} from './fetch.js';
export { createWebSearchTool, type WebSearchConfig, type WebSearchToolOptions } from './search.js';
export { SEARCH_PROVIDERS, type SearchHit, type SearchProvider } from './search-providers.js';
