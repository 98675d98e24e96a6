/**
 * SKILL.md parsing: a YAML frontmatter block (between `---` lines) followed by Markdown instructions.
 * nanobot's fields (`name`, `description`, `always`, `metadata.nanobot`) are read, and so are OpenClaw/ClawHub's
 * (`metadata.openclaw`, `metadata.clawdbot`, `metadata.clawdis`), so their skills work unchanged. Like nanobot,
 * `metadata` may also be a JSON string.
 */
import { fullYaml, parseSimpleYaml } from './simple-yaml.js';

export const SKILL_FILE = 'SKILL.md';
/** Where runtimes keep their options inside `metadata`, in the order they are consulted. */
const METADATA_KEYS = ['nanobot', 'openclaw', 'clawdbot', 'clawdis'] as const;
const FRONTMATTER = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;
const EMPTY_FRONTMATTER = /^---[ \t]*\r?\n---[ \t]*(?:\r?\n|$)/;

export interface SkillRequirements {
  /** Every one must be on PATH. */
  bins: string[];
  /** At least one must be on PATH (OpenClaw's `anyBins`). */
  anyBins: string[];
  /** Every one must be set and non-empty. */
  env: string[];
  /** Platforms the skill runs on (`darwin`, `linux`, `win32`); empty means any. */
  os: string[];
}

/** A step the skill asks the user to run to install something it needs (OpenClaw/nanobot `install` entries). */
export interface InstallStep {
  command: string;
  label?: string;
  /** The spec's `kind` (`brew`, `apt`, `node`…), when it names one. */
  kind?: string;
  /** The spec's `id`, when it has one. */
  id?: string;
}

export interface SkillManifest {
  /** The frontmatter `name`, when given (the folder name is what counts). */
  declaredName?: string;
  description: string;
  always: boolean;
  requires: SkillRequirements;
  install: InstallStep[];
  /** The Markdown after the frontmatter, trimmed. */
  body: string;
}

export type ParsedSkill = { ok: true; manifest: SkillManifest } | { ok: false; error: string };

/** Parses a SKILL.md text; an error says what is wrong in words a skill author can act on. */
export function parseSkill(text: string): ParsedSkill {
  const source = text.replace(/^\uFEFF/, '');
  if (!source.startsWith('---')) {
    return { ok: false, error: 'no frontmatter: SKILL.md must start with a --- line, then name and description' };
  }
  const empty = EMPTY_FRONTMATTER.exec(source);
  const match = empty ? undefined : FRONTMATTER.exec(source);
  if (!empty && !match) return { ok: false, error: 'frontmatter is not closed: add a --- line after it' };
  const end = (empty ?? match)?.[0].length ?? 0;
  const yamlText = match?.[1] ?? '';
  const simple = parseSimpleYaml(yamlText);
  const full = simple ? { data: simple } : parseFullYaml(yamlText);
  if ('error' in full) return { ok: false, error: full.error };
  const data = full.data;
  if (!isRecord(data)) return { ok: false, error: 'frontmatter must be a YAML mapping (key: value lines)' };

  const description = data.description;
  if (typeof description !== 'string' || !description.trim()) {
    return { ok: false, error: 'description is required: say what the skill does and when to use it' };
  }
  const name = data.name;
  if (name !== undefined && name !== null && typeof name !== 'string') {
    return { ok: false, error: 'name must be a string' };
  }
  const metadata = readMetadata(data.metadata);
  if (typeof metadata === 'string') return { ok: false, error: metadata };
  const runtime = runtimeOptions(metadata);
  const requires = readRequirements(runtime);
  if (typeof requires === 'string') return { ok: false, error: requires };

  return {
    ok: true,
    manifest: {
      ...(typeof name === 'string' && name.trim() ? { declaredName: name.trim() } : {}),
      description: description.replace(/\s+/g, ' ').trim(),
      always: data.always === true || runtime.always === true,
      requires,
      install: installSteps(runtime.install),
      body: source.slice(end).trim(),
    },
  };
}

/** The document as plain data, or an error naming the line (counted in SKILL.md, as an editor shows it). */
function parseFullYaml(yamlText: string): { data: unknown } | { error: string } {
  const doc = fullYaml().parseDocument(yamlText, { prettyErrors: false });
  const error = doc.errors[0];
  if (error) {
    // The YAML starts on line 2 of SKILL.md, after the opening ---.
    const line = yamlText.slice(0, error.pos[0]).split('\n').length + 1;
    return { error: `frontmatter is not valid YAML (line ${line}): ${firstLine(error.message)}` };
  }
  // An empty block parses as null: report the missing description rather than a shape error.
  return { data: doc.toJS() ?? {} };
}

/** `metadata` as an object: YAML mapping or a JSON string (nanobot writes it that way); a string error otherwise. */
function readMetadata(raw: unknown): Record<string, unknown> | string {
  if (raw === undefined || raw === null) return {};
  if (isRecord(raw)) return raw;
  if (typeof raw === 'string') {
    if (!raw.trim()) return {};
    try {
      const parsed: unknown = JSON.parse(raw);
      if (isRecord(parsed)) return parsed;
    } catch (err) {
      return `metadata is a string but not valid JSON: ${(err as Error).message}`;
    }
    return 'metadata must be a mapping (or a JSON object string)';
  }
  return 'metadata must be a mapping (or a JSON object string)';
}

/** The first runtime block present (`nanobot`, then `openclaw`, `clawdbot`, `clawdis`); empty when none. */
function runtimeOptions(metadata: Record<string, unknown>): Record<string, unknown> {
  for (const key of METADATA_KEYS) {
    const value = metadata[key];
    if (isRecord(value)) return value;
  }
  return {};
}

function readRequirements(runtime: Record<string, unknown>): SkillRequirements | string {
  const requires = runtime.requires ?? {};
  if (!isRecord(requires)) return 'metadata requires must be a mapping with bins / env lists';
  const lists: Partial<SkillRequirements> = {};
  for (const key of ['bins', 'anyBins', 'env'] as const) {
    const list = stringList(requires[key]);
    if (list === undefined) return `metadata requires.${key} must be a list of names`;
    lists[key] = list;
  }
  const os = stringList(runtime.os);
  if (os === undefined) return 'metadata os must be a list such as [darwin, linux]';
  return { bins: lists.bins ?? [], anyBins: lists.anyBins ?? [], env: lists.env ?? [], os };
}

/** A list of non-empty strings (a single string counts as one); undefined when it is something else. */
function stringList(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return value.trim() ? [value.trim()] : [];
  if (!Array.isArray(value)) return undefined;
  const items: string[] = [];
  for (const item of value) {
    if (typeof item !== 'string') return undefined;
    if (item.trim()) items.push(item.trim());
  }
  return items;
}

/** OpenClaw install specs as the shell commands they stand for; the user runs them, nanobot never does. */
function installSteps(raw: unknown): InstallStep[] {
  const entries = Array.isArray(raw) ? raw : isRecord(raw) ? [raw] : [];
  const steps: InstallStep[] = [];
  for (const entry of entries) {
    if (!isRecord(entry)) continue;
    const command = installCommand(entry);
    if (!command) continue;
    const label = typeof entry.label === 'string' && entry.label.trim() ? entry.label.trim() : undefined;
    const kind = typeof entry.kind === 'string' && entry.kind.trim() ? entry.kind.trim() : undefined;
    const id = typeof entry.id === 'string' && entry.id.trim() ? entry.id.trim() : undefined;
    steps.push({ command, ...(label ? { label } : {}), ...(kind ? { kind } : {}), ...(id ? { id } : {}) });
  }
  return steps;
}

function installCommand(spec: Record<string, unknown>): string | undefined {
  const text = (key: string): string | undefined => {
    const value = spec[key];
    return typeof value === 'string' && value.trim() ? value.trim() : undefined;
  };
  switch (text('kind')) {
    case 'brew':
      if (text('cask')) return `brew install --cask ${text('cask')}`;
      return text('formula') ? `brew install ${text('formula')}` : undefined;
    case 'node':
      return text('package') ? `npm install -g ${text('package')}` : undefined;
    case 'go':
      return text('module') ? `go install ${text('module')}` : undefined;
    case 'uv':
      return text('package') ? `uv tool install ${text('package')}` : undefined;
    case 'apt':
      return text('package') ? `sudo apt-get install ${text('package')}` : undefined;
    case 'pip':
      return text('package') ? `pip install ${text('package')}` : undefined;
    case 'download':
      return text('url') ? `download ${text('url')}` : undefined;
    default:
      return text('command');
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0]?.trim() ?? text;
}
