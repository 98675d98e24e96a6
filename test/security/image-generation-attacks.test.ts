/**
 * Hostile answers and hostile arguments for generate_image: image URLs that lead inward or are not http, oversize
 * downloads, endless redirects, non-images dressed as images, and reference paths out of the workspace.
 */
import { mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNetworkPolicy } from '../../src/security/network.js';
import { createPathPolicy } from '../../src/security/workspace.js';
import { fromDataUrl } from '../../src/tools/image/common.js';
import { imageDownloader } from '../../src/tools/image/download.js';
import { createGenerateImageTool } from '../../src/tools/image/tool.js';
import { type FakeImageApi, PNG, startFakeImageApi } from '../tools/image/fake-image-api.js';

let api: FakeImageApi;
beforeAll(async () => {
  api = await startFakeImageApi();
});
afterAll(() => api.close());

const allowLoopback = imageDownloader(createNetworkPolicy({ whitelist: ['127.0.0.1/32'] }));
const guarded = imageDownloader(createNetworkPolicy());

describe('generate_image under attack', () => {
  it('refuses image URLs that are not http(s) or point inward, before connecting', async () => {
    for (const url of [
      'file:///etc/passwd',
      'http://[::1]:1/x.png',
      'http://2130706433/x.png',
      'http://metadata.google.internal.localhost/x.png',
      'http://169.254.169.254/latest/meta-data/',
    ]) {
      await expect(guarded(url), url).rejects.toThrow(/blocked unsafe generated image URL/);
    }
  });

  it('stops a download over 32 MiB and an endless redirect chain', async () => {
    api.on('/big.png', () => ({ body: Buffer.alloc(33 * 1024 * 1024, 1), headers: { 'content-type': 'image/png' } }));
    await expect(allowLoopback(`${api.url}/big.png`)).rejects.toThrow(/32 MiB/);
    api.on('/loop.png', () => ({ status: 302, headers: { location: '/loop.png' } }));
    await expect(allowLoopback(`${api.url}/loop.png`)).rejects.toThrow(/redirect/i);
  });

  it('refuses HTML or SVG dressed up as an image', async () => {
    api.on('/page.png', () => ({
      body: '<html><script>alert(1)</script></html>',
      headers: { 'content-type': 'image/png' },
    }));
    await expect(allowLoopback(`${api.url}/page.png`)).rejects.toThrow(/not a supported image/);
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>x</script></svg>').toString('base64');
    expect(() => fromDataUrl(`data:image/png;base64,${svg}`)).toThrow(/not a supported image/);
  });

  it('never reads reference images outside the workspace and media dir, through links or device files', async () => {
    const home = mkdtempSync(join(tmpdir(), 'nb-image-attack-'));
    const workspace = join(home, 'workspace');
    mkdirSync(workspace);
    writeFileSync(join(home, 'private.png'), PNG);
    symlinkSync(join(home, 'private.png'), join(workspace, 'innocent.png'));
    symlinkSync(home, join(workspace, 'up'));
    let calls = 0;
    const tool = createGenerateImageTool({
      settings: {
        provider: 'openrouter',
        model: 'm',
        defaultAspectRatio: '1:1',
        defaultImageSize: '1K',
        maxImagesPerTurn: 4,
        saveDir: 'generated',
      },
      client: async () => ({
        generate: async () => {
          calls += 1;
          return { images: [{ bytes: PNG, mime: 'image/png' }], text: '' };
        },
      }),
      policy: createPathPolicy({ workspace, restrictToWorkspace: true, extraReadDirs: [join(home, 'media')] }),
      mediaDir: join(home, 'media'),
    });
    for (const path of ['/etc/passwd', '/proc/self/environ', 'innocent.png', 'up/private.png', '../private.png']) {
      const result = await tool.execute(tool.parameters.parse({ prompt: 'x', reference_images: [path] }), {
        signal: new AbortController().signal,
      });
      expect(result.isError, path).toBe(true);
    }
    expect(calls).toBe(0);
    expect(readdirSync(home).sort()).toEqual(['private.png', 'workspace']);
  });
});
