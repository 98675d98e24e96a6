import nodeFetch from 'node-fetch';

/**
 * The HTTP client under the OpenAI and Anthropic SDKs: node-fetch, over node:http. Node 20's built-in fetch parses
 * HTTP with a WebAssembly build of llhttp that V8 compiles on first use; every process that makes one request pays
 * ~50 ms for it and then waits ~100 ms at exit for the background compile to finish. That is most of a one-shot
 * `nanobot agent -m` above bare node. node:http uses Node's native parser. The SDKs only need what node-fetch
 * provides (status, headers, a body that is async-iterable, text/json, AbortSignal).
 */
export const providerFetch = nodeFetch as unknown as typeof globalThis.fetch;
