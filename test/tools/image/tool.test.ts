/** The generate_image tool over a recording fake client: artifacts, counts, reference-image checks. */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { createPathPolicy } from '../../../src/security/workspace.js';
import type { ImageClient, ImageRequest } from '../../../src/tools/image/common.js';
import { ImageGenerationError } from '../../../src/tools/image/common.js';
import { createGenerateImageTool } from '../../../src/tools/image/tool.js';
import { PNG } from './fake-image-api.js';

const settings = {
  provider: 'openrouter',
  model: 'openai/gpt-5.4-image-2',
  defaultAspectRatio: '1:1',
  defaultImageSize: '1K',
  maxImagesPerTurn: 4,
  saveDir: 'generated',
};

let home: string;
let workspace: string;
let mediaDir: string;
let calls: ImageRequest[];
let answer: () => Promise<{ images: { bytes: Buffer; mime: string }[]; text: string }>;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'nb-image-'));
  workspace = join(home, 'workspace');
  mediaDir = join(home, 'media');
  mkdirSync(workspace, { recursive: true });
  calls = [];
  answer = async () => ({ images: [{ bytes: PNG, mime: 'image/png' }], text: '' });
});

function tool(over: Partial<typeof settings> = {}) {
  const client: ImageClient = {
    generate: async (request) => {
      calls.push(request);
      return answer();
    },
  };
  return createGenerateImageTool({
    settings: { ...settings, ...over },
    client: async () => client,
    policy: createPathPolicy({ workspace, restrictToWorkspace: true, extraReadDirs: [mediaDir] }),
    mediaDir,
    timeZone: 'UTC',
    now: () => new Date('2026-05-08T10:00:00Z'),
  });
}

const ctx = { signal: new AbortController().signal };
const run = (args: Record<string, unknown>, t = tool()) => t.execute(t.parameters.parse(args), ctx);

describe('generate_image', () => {
  it('stores each image under media/<saveDir>/<day>/ with a sidecar, and says how to deliver it', async () => {
    const result = await run({ prompt: 'a robot', count: 2 });
    expect(result.isError).toBeUndefined();
    const parsed = JSON.parse(String(result.content));
    expect(parsed.artifacts).toHaveLength(2);
    const [first] = parsed.artifacts;
    expect(first.path.startsWith(join(mediaDir, 'generated', '2026-05-08', 'img_'))).toBe(true);
    expect(first.path.endsWith('.png')).toBe(true);
    expect(readFileSync(first.path)).toEqual(PNG);
    const sidecar = JSON.parse(readFileSync(first.path.replace(/\.png$/, '.json'), 'utf8'));
    expect(sidecar).toMatchObject({ id: first.id, mime: 'image/png', prompt: 'a robot', provider: 'openrouter' });
    expect(parsed.next_step).toMatch(/message tool .* media/);
    // One image per answer: asked twice, with the configured defaults.
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({ model: settings.model, aspectRatio: '1:1', imageSize: '1K' });
  });

  it('refuses a count above maxImagesPerTurn without calling the provider', async () => {
    const result = await run({ prompt: 'x', count: 3 }, tool({ maxImagesPerTurn: 2 }));
    expect(result).toEqual({ isError: true, content: expect.stringMatching(/maxImagesPerTurn \(2\)/) });
    expect(calls).toHaveLength(0);
  });

  it('passes reference images from the workspace or media dir, refuses others, links out and non-images', async () => {
    writeFileSync(join(workspace, 'me.png'), PNG);
    const ok = await run({ prompt: 'edit', reference_images: ['me.png'] });
    expect(ok.isError).toBeUndefined();
    expect(calls[0]?.referenceImages[0]).toMatchObject({ mime: 'image/png', name: join(workspace, 'me.png') });

    const outside = join(home, 'secret.png');
    writeFileSync(outside, PNG);
    expect((await run({ prompt: 'e', reference_images: [outside] })).content).toMatch(/inside the workspace/);
    symlinkSync(outside, join(workspace, 'link.png'));
    expect((await run({ prompt: 'e', reference_images: ['link.png'] })).isError).toBe(true);
    writeFileSync(join(workspace, 'notes.png'), 'not an image');
    expect((await run({ prompt: 'e', reference_images: ['notes.png'] })).content).toMatch(/unsupported reference/);
    expect((await run({ prompt: 'e', reference_images: ['missing.png'] })).content).toMatch(/not found/);
    expect(calls).toHaveLength(1);
  });

  it('turns provider failures into error results, and refuses an unsafe saveDir', async () => {
    answer = async () => {
      throw new ImageGenerationError('openrouter returned no images for this request');
    };
    expect(await run({ prompt: 'x' })).toEqual({
      isError: true,
      content: 'Error: openrouter returned no images for this request',
    });
    answer = async () => ({ images: [{ bytes: PNG, mime: 'image/png' }], text: '' });
    expect((await run({ prompt: 'x' }, tool({ saveDir: '../escape' }))).content).toMatch(/saveDir/);
    expect(readdirSync(home)).not.toContain('escape');
  });
});
