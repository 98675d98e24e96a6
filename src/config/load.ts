/**
 * Reading the config: JSON → camelCase keys → `NANOBOT_A__B` env overrides → `${VAR}` interpolation → zod.
 * The raw (uninterpolated) tree is kept alongside, so writes never bake secrets from the environment into the file.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { z } from 'zod';
import { UserError } from '../util/errors.js';
import { expandHome } from '../util/fs.js';
import { isNamedEntry, isPlainObject, normalizeKeys, snakeToCamel } from './keys.js';
import { type PrepareOptions, prepareTree } from './prepare.js';
import { type Config, ConfigSchema } from './schema.js';

export interface LoadedConfig {
  config: Config;
  /** The file's contents with keys normalised, before env overrides and interpolation. */
  raw: Record<string, unknown>;
  configPath: string;
  /** Directory of the config file: sessions/, logs/, media/ live here. */
  dataDir: string;
  workspace: string;
  home: string;
  /** Runtime settings that nanobot reads from plain environment variables. */
  runtime: { llmTimeoutMs: number; streamIdleTimeoutMs: number; maxConcurrentRequests: number };
}

export interface LoadOptions {
  configPath?: string;
  workspace?: string;
  env?: NodeJS.ProcessEnv;
  home?: string;
  /** The host's time zone for `timezoneMode: "auto"` (tests pin it). */
  systemTimezone?: () => string;
}

export function defaultConfigPath(home = homedir()): string {
  return join(home, '.nanobot', 'config.json');
}

export async function readRawConfig(path: string): Promise<Record<string, unknown>> {
  if (!existsSync(path)) return {};
  const text = await readFile(path, 'utf8');
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UserError(
      `${path} is not valid JSON: ${(err as Error).message}`,
      'Fix the syntax (a trailing comma or a missing quote is the usual cause), or move the file away and run `nanobot onboard`.',
    );
  }
  if (!isPlainObject(parsed)) throw new UserError(`${path} must contain a JSON object at the top level.`);
  return normalizeKeys(parsed) as Record<string, unknown>;
}

export interface EnvOverrides {
  tree: Record<string, unknown>;
  /** The variables' original strings by config path, for keys whose schema wants a string (`"0123"` stays text). */
  strings: Map<string, string>;
}

/** Applies `NANOBOT_GATEWAY__PORT=…`-style variables onto a copy of `raw`. Values are JSON when they parse. */
export function applyEnvOverrides(raw: Record<string, unknown>, env: NodeJS.ProcessEnv): EnvOverrides {
  const out = structuredClone(raw);
  const strings = new Map<string, string>();
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('NANOBOT_') || !name.includes('__') || value === undefined) continue;
    const segments = name.slice('NANOBOT_'.length).split('__');
    let node: Record<string, unknown> = out;
    const path: string[] = [];
    segments.forEach((segment, i) => {
      const lower = segment.toLowerCase();
      // A named entry (`providers.lm_studio`) merges into the file's block however that block spells the name.
      const key = isNamedEntry(path) ? (existingEntry(node, lower) ?? lower) : snakeToCamel(lower);
      if (i === segments.length - 1) {
        node[key] = parseEnvValue(value);
        strings.set([...path, key].join('.'), value);
        return;
      }
      const next = node[key];
      node[key] = isPlainObject(next) ? next : {};
      node = node[key] as Record<string, unknown>;
      path.push(key);
    });
  }
  return { tree: out, strings };
}

const looseName = (name: string) => name.toLowerCase().replace(/[_-]/g, '');

function existingEntry(node: Record<string, unknown>, name: string): string | undefined {
  return Object.keys(node).find((key) => looseName(key) === looseName(name));
}

function parseEnvValue(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/** Replaces `${VAR}` in every string. A missing variable is an error naming the config key. */
export function interpolateEnv(value: unknown, env: NodeJS.ProcessEnv, path: string[] = []): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const found = env[name];
      if (found === undefined) {
        throw new UserError(
          `${path.join('.')}: environment variable \${${name}} is not set.`,
          `Export ${name} before running nanobot, or replace \${${name}} in the config with a value.`,
        );
      }
      return found;
    });
  }
  if (Array.isArray(value)) return value.map((item, i) => interpolateEnv(item, env, [...path, String(i)]));
  if (isPlainObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateEnv(v, env, [...path, k])]));
  }
  return value;
}

/**
 * Validates a normalised tree; errors name each path (`agents.defaults.maxTokens: expected a number`).
 * `null` anywhere means "unset" and upstream's old key names are read (prepare.ts), as upstream does.
 * An env override parsed as JSON (a number, say) where the schema wants a string is put back as the string.
 */
export function parseConfig(
  input: unknown,
  source = 'config',
  envStrings = new Map<string, string>(),
  prepare: PrepareOptions = {},
): Config {
  const tree = isPlainObject(input) ? prepareTree(input, prepare) : input;
  let result = ConfigSchema.safeParse(tree);
  if (!result.success && envStrings.size > 0 && isPlainObject(tree)) {
    let changed = false;
    for (const issue of result.error.issues) {
      const original = envStrings.get(issue.path.map(String).join('.'));
      if (issue.code === 'invalid_type' && issue.expected === 'string' && original !== undefined) {
        setAt(tree, issue.path.map(String), original);
        changed = true;
      }
    }
    if (changed) result = ConfigSchema.safeParse(tree);
  }
  if (result.success) return result.data;
  const problems = result.error.issues.slice(0, 8).map((issue) => describeIssue(issue, tree));
  throw new UserError(
    `Invalid ${source}:\n  ${problems.join('\n  ')}`,
    'Fix the named keys (see `nanobot config schema` for every key and type).',
  );
}

function describeIssue(issue: z.core.$ZodIssue, tree: unknown): string {
  const path = issue.path.map(String).join('.') || '(root)';
  if (issue.code === 'invalid_type') {
    const actual = valueAt(tree, issue.path);
    const got = actual === undefined ? 'nothing' : Array.isArray(actual) ? 'an array' : `${typeof actual}`;
    return `${path}: expected ${article(issue.expected)}, got ${got}${typeof actual === 'string' ? ` "${actual}"` : ''}`;
  }
  if (issue.code === 'invalid_value')
    return `${path}: expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  return `${path}: ${issue.message}`;
}

function article(expected: string): string {
  const named: Record<string, string> = { int: 'an integer', object: 'an object', array: 'an array' };
  return named[expected] ?? `a ${expected}`;
}

function setAt(tree: Record<string, unknown>, path: string[], value: unknown): void {
  let node: unknown = tree;
  for (const key of path.slice(0, -1)) node = (node as Record<string, unknown>)[key];
  const last = path.at(-1);
  if (isPlainObject(node) && last !== undefined) node[last] = value;
}

function valueAt(tree: unknown, path: PropertyKey[]): unknown {
  let node = tree;
  for (const key of path) {
    if (!isPlainObject(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** Loads and validates the config. A missing file yields the defaults (the caller may then write it). */
export async function loadConfig(options: LoadOptions = {}): Promise<LoadedConfig> {
  const env = options.env ?? process.env;
  const home = options.home ?? env.HOME ?? homedir();
  const configPath = resolve(expandHome(options.configPath ?? defaultConfigPath(home), home));
  const raw = await readRawConfig(configPath);
  const overrides = applyEnvOverrides(raw, env);
  const effective = interpolateEnv(overrides.tree, env);
  const config = parseConfig(
    effective,
    configPath,
    overrides.strings,
    options.systemTimezone ? { systemTimezone: options.systemTimezone } : {},
  );
  const workspace = resolve(expandHome(options.workspace ?? config.agents.defaults.workspace, home));
  const runtime = {
    llmTimeoutMs: positiveNumber(env.NANOBOT_LLM_TIMEOUT_S, 300) * 1000,
    // Upstream's name and default: the longest silence of a model stream once its response has started.
    streamIdleTimeoutMs: positiveNumber(env.NANOBOT_STREAM_IDLE_TIMEOUT_S, 90) * 1000,
    maxConcurrentRequests: positiveNumber(env.NANOBOT_MAX_CONCURRENT_REQUESTS, 3),
  };
  return { config, raw, configPath, dataDir: dirname(configPath), workspace, home, runtime };
}

function positiveNumber(value: string | undefined, fallback: number): number {
  const parsed = Number(value);
  return value !== undefined && Number.isFinite(parsed) && parsed > 0 ? parsed : fallback;
}
