/**
 * A fast path for the frontmatter most skills have: top-level `key: value` lines whose values are plain words,
 * quoted strings, booleans or one-line JSON (`metadata: {"nanobot": …}`). It returns exactly what the `yaml` package
 * would, or undefined for anything else, which then goes to the full parser. Loading that parser costs tens of
 * milliseconds, and every `nanobot agent -m` reads the skills before its first request.
 */
import { createRequire } from 'node:module';

type YamlModule = typeof import('yaml');

const KEY_LINE = /^([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]+(.*))?$/;
const SINGLE_QUOTED = /^'((?:[^']|'')*)'$/;
/** Characters that give a plain YAML scalar another meaning when they come first. */
const INDICATORS = new Set([...'-?:,[]{}#&*!|>\'"%@`']);
const BOOLEANS: Record<string, boolean> = {
  true: true,
  True: true,
  TRUE: true,
  false: false,
  False: false,
  FALSE: false,
};
const NULLS = new Set(['~', 'null', 'Null', 'NULL']);

/** The mapping, or undefined when the text uses YAML beyond the simple subset. */
export function parseSimpleYaml(text: string): Record<string, unknown> | undefined {
  const result: Record<string, unknown> = {};
  for (const line of text.split(/\r?\n/)) {
    if (!line.trim() || line.startsWith('#')) continue;
    const match = KEY_LINE.exec(line);
    if (!match?.[1] || Object.hasOwn(result, match[1])) return undefined;
    const value = scalar((match[2] ?? '').trimEnd());
    if (value === UNSUPPORTED) return undefined;
    result[match[1]] = value;
  }
  return result;
}

const UNSUPPORTED = Symbol('unsupported');

function scalar(text: string): unknown {
  if (text === '' || NULLS.has(text)) return null;
  if (Object.hasOwn(BOOLEANS, text)) return BOOLEANS[text];
  const first = text[0] ?? '';
  if (first === '{' || first === '[' || first === '"') return jsonValue(text);
  // `version: 1.2.0` is common; YAML reads dotted versions as text and plain decimals as numbers.
  if (/^\d+(?:\.\d+){2,}$/.test(text)) return text;
  if (/^-?\d{1,15}(?:\.\d{1,15})?$/.test(text)) return Number(text);
  const quoted = SINGLE_QUOTED.exec(text);
  if (quoted) return (quoted[1] ?? '').replace(/''/g, "'");
  // Other numbers, comments, tabs, anchors, tags, block scalars and nested mappings are left to the full parser.
  if (INDICATORS.has(first) || /^[+.\d]/.test(first) || /\t| #|:( |$)/.test(text)) return UNSUPPORTED;
  return text;
}

function jsonValue(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text);
    return value;
  } catch {
    return UNSUPPORTED;
  }
}

let yamlModule: YamlModule | undefined;

/**
 * The full YAML parser, loaded on first need. The package ships without node_modules, so dist/ must carry yaml:
 * esbuild bundles the plain `require('yaml')` and runs it on the first call. From src/ (the tests) an ES module has
 * no `require`, and Node resolves yaml from node_modules instead.
 */
export function fullYaml(): YamlModule {
  yamlModule ??= (
    typeof require === 'function' ? require('yaml') : createRequire(import.meta.url)('yaml')
  ) as YamlModule;
  return yamlModule;
}
