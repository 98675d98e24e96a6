/**
 * `generate_image` for the agent, when `tools.imageGeneration.enabled`: the provider's client (its key, base URL,
 * headers, body extras and proxy from `providers.<name>`), image URLs in answers downloaded through the SSRF guard
 * (through the provider's proxy when it has one), the Codex sign-in for `openai_codex`.
 */
import { join } from 'node:path';
import type { LoadedConfig } from '../config/load.js';
import { CodexCredentials } from '../providers/oauth/openai-codex.js';
import { TokenStore } from '../providers/oauth/store.js';
import { createNetworkPolicy, type NetworkPolicy } from '../security/network.js';
import { parseProxyUrl } from '../security/proxy.js';
import { createPathPolicy } from '../security/workspace.js';
import { type ClientContext, type ImageClient, ImageGenerationError } from '../tools/image/common.js';
import { imageDownloader } from '../tools/image/download.js';
import { IMAGE_PROVIDERS, imageProviderName, imageProviderSettings } from '../tools/image/providers.js';
import { createGenerateImageTool } from '../tools/image/tool.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { Logger } from '../util/log.js';

/** Where generated images are kept (`<dataDir>/media/<saveDir>`); the message tool may attach from there. */
export function generatedImagesDir(loaded: LoadedConfig): string | undefined {
  const image = loaded.config.tools.imageGeneration;
  return image.enabled ? join(loaded.dataDir, 'media', image.saveDir) : undefined;
}

export function registerImageTool(
  tools: ToolRegistry,
  loaded: LoadedConfig,
  env: NodeJS.ProcessEnv,
  network: NetworkPolicy,
  log?: Logger,
): void {
  const { config, workspace, dataDir } = loaded;
  const image = config.tools.imageGeneration;
  if (!image.enabled) return;
  const mediaDir = join(dataDir, 'media');
  let client: Promise<ImageClient> | undefined;
  tools.register(
    createGenerateImageTool({
      settings: image,
      client: () => {
        client ??= imageClient(loaded, env, network, log);
        return client;
      },
      policy: createPathPolicy({
        workspace,
        restrictToWorkspace: config.tools.restrictToWorkspace,
        extraReadDirs: [mediaDir],
      }),
      mediaDir,
      timeZone: config.agents.defaults.timezone,
    }),
  );
}

async function imageClient(
  loaded: LoadedConfig,
  env: NodeJS.ProcessEnv,
  shared: NetworkPolicy,
  log?: Logger,
): Promise<ImageClient> {
  const configured = loaded.config.tools.imageGeneration.provider;
  const name = imageProviderName(configured);
  const factory = name ? IMAGE_PROVIDERS[name] : undefined;
  if (!name || !factory) {
    throw new ImageGenerationError(
      `unsupported image generation provider '${configured}' (supported: ${Object.keys(IMAGE_PROVIDERS).join(', ')})`,
    );
  }
  const settings = imageProviderSettings(name, loaded.config.providers as Record<string, Record<string, unknown>>, env);
  let fetch: typeof globalThis.fetch = globalThis.fetch;
  let network = shared;
  if (settings.proxy) {
    const parsed = parseProxyUrl(settings.proxy, `providers.${name}.proxy`);
    if (!parsed.ok) throw new ImageGenerationError(parsed.reason);
    const { proxiedFetch } = await import('../security/proxy.js');
    fetch = await proxiedFetch(parsed.url);
    network = createNetworkPolicy({ whitelist: loaded.config.tools.ssrfWhitelist, proxy: parsed.url });
  }
  const ctx: ClientContext = {
    ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
    ...(settings.apiBase ? { apiBase: settings.apiBase } : {}),
    extraHeaders: settings.extraHeaders,
    extraBody: settings.extraBody,
    fetch,
    download: imageDownloader(network),
    ...(log ? { warn: (message: string) => log.warn(message) } : {}),
  };
  if (name === 'openai_codex') {
    const source = new CodexCredentials(new TokenStore(join(loaded.dataDir, 'auth')), env, fetch);
    ctx.codexCredentials = () => source.get();
  }
  return factory(ctx);
}
