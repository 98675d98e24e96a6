/**
 * Upstream's own config files load as they are: `null` is "unset" for every key (pydantic's Optional fields; its
 * onboard writes them), its old key names are read, `timezoneMode` picks the zone, and a file that would not load is
 * never written to.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isPlainObject } from '../../src/config/keys.js';
import { loadConfig, parseConfig, readRawConfig } from '../../src/config/load.js';
import { ensureConfigFile, updateConfigFile } from '../../src/config/onboard.js';
import { UserError } from '../../src/util/errors.js';
import { type UpstreamHomeName, upstreamHome } from '../helpers/upstream-homes.js';

const HOMES: UpstreamHomeName[] = ['pyhome', 'pyhome-agentonly', 'py030home'];
const berlin = { systemTimezone: () => 'Europe/Berlin' };

function readHome(name: UpstreamHomeName): { text: string; tree: Record<string, unknown> } {
  const home = upstreamHome(name);
  try {
    const text = readFileSync(home.configPath, 'utf8');
    return { text, tree: JSON.parse(text) as Record<string, unknown> };
  } finally {
    home.cleanup();
  }
}

/** Every path to a value that is not an object (list items included), e.g. ['channels', 'transcriptionLanguage']. */
function leaves(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return value.length ? value.flatMap((item, i) => leaves(item, [...at, i])) : [at];
  if (isPlainObject(value) && Object.keys(value).length) {
    return Object.entries(value).flatMap(([key, child]) => leaves(child, [...at, key]));
  }
  return [at];
}

function withNull(tree: Record<string, unknown>, path: (string | number)[]): Record<string, unknown> {
  const copy = structuredClone(tree);
  let node: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path.at(-1) as string | number] = null;
  return copy;
}

describe('upstream’s config files load as they are', () => {
  it.each(HOMES)('%s: loads, and reads what upstream wrote', async (name) => {
    const home = upstreamHome(name);
    try {
      const { config } = await loadConfig({ configPath: home.configPath, home: home.home, env: {}, ...berlin });
      expect(config.agents.defaults.model).toBe('test-model');
      expect(config.agents.defaults.provider).toBe('custom');
      expect(config.tools.restrictToWorkspace).toBe(false);
      expect(config.agents.defaults.timezone).toBe(name === 'py030home' ? 'UTC' : 'Europe/Berlin');
      expect(config.agents.defaults.timezoneMode).toBe('manual');
    } finally {
      home.cleanup();
    }
  });

  it.each(HOMES)('%s: null at any single key (object member or list item’s member) means unset', (name) => {
    const { tree } = readHome(name);
    const baseline = JSON.stringify(parseConfig(tree, 'config', new Map(), berlin));
    const objectMembers = leaves(tree).filter((path) => path.length > 0 && typeof path.at(-1) === 'string');
    expect(objectMembers.length).toBeGreaterThan(400);
    for (const path of objectMembers) {
      expect(() => parseConfig(withNull(tree, path), path.join('.'), new Map(), berlin)).not.toThrow();
    }
    // Whole blocks set to null as well, at every depth.
    const blocks = new Set(
      objectMembers.flatMap((path) => path.slice(0, -1).map((_, i) => path.slice(0, i + 1).join('\0'))),
    );
    for (const block of blocks) {
      const path = block.split('\0');
      expect(() => parseConfig(withNull(tree, path), path.join('.'), new Map(), berlin)).not.toThrow();
    }
    expect(JSON.stringify(parseConfig(tree, 'config', new Map(), berlin))).toBe(baseline);
  });

  it('null is "unset": the value is the default, as if the key were absent', () => {
    const nulls = parseConfig(
      {
        agents: { defaults: { maxTokens: null, dream: null } },
        gateway: { port: null },
        channels: { sendMaxRetries: null },
      },
      'config',
      new Map(),
      berlin,
    );
    const absent = parseConfig({}, 'config', new Map(), berlin);
    expect(nulls).toEqual(absent);
  });

  it('keeps null inside user data (extraBody is sent as written)', () => {
    const config = parseConfig({ providers: { openai: { extraBody: { seed: null } } } }, 'config', new Map(), berlin);
    expect(config.providers.openai?.extraBody).toEqual({ seed: null });
  });

  it('reads upstream’s moved and aliased keys under their current names; the current name wins', () => {
    const config = parseConfig(
      {
        tools: { exec: { restrictToWorkspace: false } },
        agents: { defaults: { sessionTtlMinutes: 7, dream: { model: 'fast' } } },
        modelPresets: { fast: { model: 'm' } },
      },
      'config',
      new Map(),
      berlin,
    );
    expect(config.tools.restrictToWorkspace).toBe(false);
    expect(config.agents.defaults.idleCompactAfterMinutes).toBe(7);
    expect(config.agents.defaults.dream.modelOverride).toBe('fast');
    const both = parseConfig(
      { tools: { restrictToWorkspace: true, exec: { restrictToWorkspace: false } } },
      'config',
      new Map(),
      berlin,
    );
    expect(both.tools.restrictToWorkspace).toBe(true);
  });
});

describe('agents.defaults.timezoneMode (upstream’s rule)', () => {
  const zone = (defaults: Record<string, unknown>) =>
    parseConfig({ agents: { defaults } }, 'config', new Map(), berlin).agents.defaults;

  it('"auto" uses the system’s zone, whatever timezone says', () => {
    expect(zone({ timezoneMode: 'auto', timezone: 'Asia/Tokyo' })).toMatchObject({
      timezone: 'Europe/Berlin',
      timezoneMode: 'auto',
    });
  });
  it('"manual" keeps timezone as written', () => {
    expect(zone({ timezoneMode: 'manual', timezone: 'Asia/Tokyo' }).timezone).toBe('Asia/Tokyo');
  });
  it('no mode: a config that names a timezone is manual, one that does not is auto', () => {
    expect(zone({ timezone: 'Asia/Tokyo' })).toMatchObject({ timezone: 'Asia/Tokyo', timezoneMode: 'manual' });
    expect(zone({})).toMatchObject({ timezone: 'Europe/Berlin', timezoneMode: 'auto' });
    expect(zone({ timezoneMode: null, timezone: null })).toMatchObject({ timezone: 'Europe/Berlin' });
  });
});

describe('a file that would not load is never written to', () => {
  async function configFile(text: string): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'nb-refuse-'));
    const path = join(dir, 'config.json');
    writeFileSync(path, text);
    return path;
  }
  const BAD = [
    '{"agents": {"defaults": {"maxTokens": "lots"}}}',
    '{"gateway": {"port": 99999}}',
    '{"agents": {"defaults": {"dream": {"intervalH": "${NOT_SET_ANYWHERE}"}}}}',
    '{"channels": {"sendMaxRetries": -1}}',
    '{"tools": {"exec": {"sandbox": "docker"}}}',
  ];

  it.each(BAD)('onboard refuses %s and leaves it byte for byte', async (text) => {
    const path = await configFile(`${text}\n\n`);
    await expect(ensureConfigFile(path, {})).rejects.toThrow(UserError);
    expect(readFileSync(path, 'utf8')).toBe(`${text}\n\n`);
  });

  it.each(BAD)('a config edit refuses %s and leaves it byte for byte', async (text) => {
    const path = await configFile(text);
    await expect(updateConfigFile(path, () => {}, {})).rejects.toThrow(UserError);
    expect(readFileSync(path, 'utf8')).toBe(text);
  });

  it.each(HOMES)('%s: onboard completes it and keeps every value upstream wrote (nulls too)', async (name) => {
    const { text } = readHome(name);
    const path = await configFile(text);
    await ensureConfigFile(path, {});
    const before = await readRawConfig(await configFile(text));
    const after = await readRawConfig(path);
    for (const leaf of leaves(before)) {
      const get = (tree: unknown) => leaf.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], tree);
      expect(get(after), leaf.join('.')).toEqual(get(before));
    }
    expect(() => parseConfig(after)).not.toThrow();
  });
});

describe('values upstream accepts are not refused', () => {
  const tools = (value: Record<string, unknown>) => parseConfig({ tools: value }, 'config', new Map(), berlin).tools;
  it('tools.exec.timeout 0 ("no limit" upstream) and beyond 600 s get the exec cap, 600 s', () => {
    expect(tools({ exec: { timeout: 0 } }).exec.timeout).toBe(600);
    expect(tools({ exec: { timeout: 1200 } }).exec.timeout).toBe(600);
    expect(tools({ exec: { timeout: 30 } }).exec.timeout).toBe(30);
  });
  it('tools.web.search.maxResults above 10 is read as 10', () => {
    expect(tools({ web: { search: { maxResults: 20 } } }).web.search.maxResults).toBe(10);
  });
  it('a channel’s own groupPolicy values pass the config (the channel checks them)', () => {
    expect(() => parseConfig({ channels: { mattermost: { groupPolicy: 'thread' } } })).not.toThrow();
  });
});
