/**
 * Downloads an image URL a provider answered with. The URL comes from a remote answer, so it goes through the SSRF
 * guard like a web fetch: every hop checked and pinned, private and internal addresses refused (unless in
 * tools.ssrfWhitelist), at most 32 MiB, and the bytes must be an image.
 */
import { NetworkBlockedError, type NetworkPolicy } from '../../security/network.js';
import { asImage, type ImageFile, ImageGenerationError, MAX_IMAGE_BYTES, withTimeout } from './common.js';

export function imageDownloader(network: Pick<NetworkPolicy, 'fetch'>, timeoutMs = 120_000) {
  return async (url: string, signal?: AbortSignal): Promise<ImageFile> => {
    let response: Awaited<ReturnType<NetworkPolicy['fetch']>>;
    try {
      response = await network.fetch(url, { maxRedirects: 5, signal: withTimeout(signal, timeoutMs) });
    } catch (error) {
      if (error instanceof NetworkBlockedError) {
        throw new ImageGenerationError(`blocked unsafe generated image URL: ${error.reason}`);
      }
      throw new ImageGenerationError(`failed to download generated image: ${(error as Error).message}`);
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      throw new ImageGenerationError(`failed to download generated image (HTTP ${response.status})`);
    }
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    if (declared > MAX_IMAGE_BYTES) {
      await response.body?.cancel().catch(() => {});
      throw new ImageGenerationError('generated image exceeded the 32 MiB download limit');
    }
    const chunks: Buffer[] = [];
    let total = 0;
    if (response.body) {
      for await (const chunk of response.body) {
        total += chunk.length;
        if (total > MAX_IMAGE_BYTES) {
          throw new ImageGenerationError('generated image exceeded the 32 MiB download limit');
        }
        chunks.push(Buffer.from(chunk));
      }
    }
    return asImage(Buffer.concat(chunks), 'the generated image URL');
  };
}
