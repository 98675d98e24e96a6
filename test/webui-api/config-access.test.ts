import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { WebuiApiError } from '../../src/webui/api.js';
import { configAccess } from '../../src/webui/config-access.js';

async function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'nb-config-access-'));
  const configPath = join(dir, 'config.json');
  writeFileSync(configPath, JSON.stringify({ agents: { defaults: { model: 'a-model', max_tokens: 100 } } }));
  const loaded = await loadConfig({ configPath, workspace: join(dir, 'ws'), env: {}, home: dir });
  const reloads: string[] = [];
  const access = configAccess(
    () => loaded,
    async () => {
      reloads.push(readFileSync(configPath, 'utf8'));
      return true;
    },
    {},
  );
  return { configPath, access, reloads };
}

const read = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

describe('the settings API writes the config as the CLI does', () => {
  it('writes camelCase keys with every default block, then applies the change', async () => {
    const { configPath, access, reloads } = await setup();
    const result = await access.update((raw) => {
      const defaults = (raw.agents as { defaults: Record<string, unknown> }).defaults;
      defaults.maxTokens = 2048;
    });
    expect(result).toEqual({ applied: true });
    const written = read(configPath);
    expect(written.agents.defaults).toMatchObject({ model: 'a-model', maxTokens: 2048 });
    expect(written.agents.defaults.max_tokens).toBeUndefined();
    expect(written.channels).toBeDefined();
    expect(reloads).toHaveLength(1);
  });

  it('refuses a value the schema refuses with a 400 and leaves the file as it was', async () => {
    const { configPath, access, reloads } = await setup();
    const before = readFileSync(configPath, 'utf8');
    const attempt = access.update((raw) => {
      (raw.agents as { defaults: Record<string, unknown> }).defaults.maxTokens = 'lots';
    });
    await expect(attempt).rejects.toBeInstanceOf(WebuiApiError);
    await expect(attempt).rejects.toMatchObject({ status: 400 });
    expect(readFileSync(configPath, 'utf8')).toBe(before);
    expect(reloads).toHaveLength(0);
  });

  it('runs changes one after another, so none is lost, and a failed one does not stop the next', async () => {
    const { configPath, access } = await setup();
    const set = (key: string, value: unknown) =>
      access.update((raw) => {
        (raw.agents as { defaults: Record<string, unknown> }).defaults[key] = value;
      });
    const results = await Promise.allSettled([set('maxTokens', 1), set('temperature', 'hot'), set('temperature', 0.5)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(read(configPath).agents.defaults).toMatchObject({ maxTokens: 1, temperature: 0.5 });
  });
});
