/**
 * SkillsLoader: finds `<workspace>/skills/<name>/SKILL.md` and the built-in skills, decides which can be used here,
 * and builds what the model sees of them. A workspace skill hides the built-in one of the same name; unmet
 * requirements, `agents.defaults.disabledSkills` and a broken frontmatter keep a skill out of the prompt (the user
 * sees why in `/skill` and `nanobot skills list`).
 *
 * The prompt sections are rebuilt only when a skill file changes (stat-checked each turn), so the system prompt stays
 * byte-stable between turns; a requirement met later (a binary installed mid-session) shows after the next change
 * or restart.
 */
import { basename, delimiter, dirname, join } from 'node:path';
import type { LoadedConfig } from '../config/load.js';
import { WorkspaceFs, WorkspaceFsError } from '../security/workspace-fs.js';
import { parseSkill, SKILL_FILE, type SkillManifest } from './frontmatter.js';
import { activeSkillsSection, invokedSkillsBlock, skillsListingSection } from './prompt.js';
import { findExecutable, type RequirementContext, unmetRequirements } from './requirements.js';

export type SkillSource = 'workspace' | 'builtin';
export type SkillStatus = 'available' | 'unavailable' | 'disabled' | 'invalid';

export interface Skill {
  /** The folder name: what `$name`, `/skill` and disabledSkills refer to. */
  name: string;
  source: SkillSource;
  dir: string;
  file: string;
  status: SkillStatus;
  /** Why it is not available: unmet requirements, the config key that disables it, or the frontmatter error. */
  reasons: string[];
  /** Absent only when the SKILL.md could not be parsed. */
  manifest?: SkillManifest;
  /** A workspace skill that hides a built-in one of the same name. */
  overridesBuiltin: boolean;
}

export interface SkillsLoaderOptions {
  workspace: string;
  /** The package's `skills/` (BUILTIN_SKILLS); none when omitted. */
  builtinDir?: string;
  /** `agents.defaults.disabledSkills`. */
  disabled?: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** PATH searched for required binaries; defaults to `env.PATH`. */
  searchPath?: string;
  platform?: NodeJS.Platform;
  /** Environment variables `exec` passes to commands; see RequirementContext. */
  commandEnvKeys?: readonly string[];
  /** Skills that cannot work with this config, with why (image-generation while its tool is off). */
  unavailable?: Readonly<Record<string, string>>;
}

/** What `exec` always passes to commands (buildChildEnv), whatever tools.exec.allowedEnvKeys says. */
const COMMAND_ENV_KEYS = ['HOME', 'LANG', 'TERM', 'PATH'];
/** `$name` not preceded by a word character or `$` (so `$$x`, `a$b` and `${x}` are left alone). */
/** A SKILL.md larger than this is refused (it is read into prompts). */
const MAX_SKILL_BYTES = 256 * 1024;
type Stats = NonNullable<ReturnType<WorkspaceFs['statSync']>>;
const SKILL_REFERENCE = /(?<![\w$])\$([A-Za-z0-9][A-Za-z0-9_-]*)/g;

export class SkillsLoader {
  readonly workspaceDir: string;
  readonly builtinDir: string | undefined;
  private readonly disabled: ReadonlySet<string>;
  private readonly unavailable: Readonly<Record<string, string>>;
  private readonly requirementContext: RequirementContext;
  private cachedSections?: { fingerprint: string; sections: string[] };

  constructor(options: SkillsLoaderOptions) {
    this.workspaceDir = join(options.workspace, 'skills');
    this.builtinDir = options.builtinDir;
    this.disabled = new Set(options.disabled ?? []);
    this.unavailable = options.unavailable ?? {};
    const env = options.env ?? process.env;
    this.requirementContext = {
      env,
      searchPath: options.searchPath ?? env.PATH ?? '',
      platform: options.platform ?? process.platform,
      ...(options.commandEnvKeys ? { commandEnvKeys: options.commandEnvKeys } : {}),
    };
  }

  /** Every skill found, workspace ones hiding built-ins of the same name, sorted by name. */
  list(): Skill[] {
    const workspaceRoot = skillRoot(this.workspaceDir);
    const builtinRoot = this.builtinDir ? skillRoot(this.builtinDir) : undefined;
    const workspace = skillDirs(workspaceRoot);
    const builtin = builtinRoot ? skillDirs(builtinRoot) : [];
    const workspaceNames = new Set(workspace.map((entry) => entry.name));
    const builtinNames = new Set(builtin.map((entry) => entry.name));
    const skills = [
      ...workspace.map((entry) => this.load(workspaceRoot, entry, 'workspace', builtinNames.has(entry.name))),
      ...(builtinRoot
        ? builtin
            .filter((entry) => !workspaceNames.has(entry.name))
            .map((entry) => this.load(builtinRoot, entry, 'builtin', false))
        : []),
    ];
    return skills.sort((a, b) => compareNames(a.name, b.name));
  }

  /** The skill's SKILL.md text, read through the workspace-file layer (never through a link out of its folder). */
  readInstructions(skill: Skill): string {
    return readSkillFile(skillRoot(dirname(skill.dir)), basename(skill.dir));
  }

  /** The binaries and environment variables the skill needs that are not there (the WebUI's requirements panel). */
  missingRequirements(skill: Pick<Skill, 'manifest'>): { bins: string[]; env: string[] } {
    const requires = skill.manifest?.requires;
    if (!requires) return { bins: [], env: [] };
    const { searchPath, platform, env } = this.requirementContext;
    const onPath = (bin: string) => findExecutable(bin, searchPath, platform) !== undefined;
    const bins = requires.bins.filter((bin) => !onPath(bin));
    if (requires.anyBins.length > 0 && !requires.anyBins.some(onPath)) bins.push(...requires.anyBins);
    return { bins, env: requires.env.filter((name) => !env[name]) };
  }

  get(name: string): Skill | undefined {
    return this.list().find((skill) => skill.name === name);
  }

  /**
   * The skills parts of the system prompt: always-on skills in full, then the others as one line each. Rebuilt only
   * when a skill file or folder changes, so the bytes are the same from turn to turn.
   */
  systemPromptSections(): string[] {
    const fingerprint = this.fingerprint();
    if (this.cachedSections?.fingerprint === fingerprint) return this.cachedSections.sections;
    const usable = this.list().filter((skill) => skill.status === 'available');
    const always = usable.filter((skill) => skill.manifest?.always);
    const listed = usable.filter((skill) => !skill.manifest?.always);
    const sections: string[] = [];
    if (always.length > 0) sections.push(activeSkillsSection(always));
    if (listed.length > 0) sections.push(skillsListingSection(listed));
    this.cachedSections = { fingerprint, sections };
    return sections;
  }

  /**
   * The full instructions of each skill the message names as `$name`, for this message only; undefined when it
   * names none. An unavailable skill gets a one-line note instead, so the model can tell the user why.
   */
  invokedSkills(text: string): string | undefined {
    if (!text.includes('$')) return undefined;
    const names = [...new Set([...text.matchAll(SKILL_REFERENCE)].map((match) => match[1] ?? ''))];
    if (names.length === 0) return undefined;
    const skills = this.list().filter((skill) => names.includes(skill.name) && !skill.manifest?.always);
    if (skills.length === 0) return undefined;
    return invokedSkillsBlock(skills);
  }

  private load(
    root: SkillRoot,
    { name, dir }: { name: string; dir: string },
    source: SkillSource,
    overridesBuiltin: boolean,
  ): Skill {
    const file = join(dir, SKILL_FILE);
    const base = { name, source, dir, file, overridesBuiltin };
    let text: string;
    try {
      text = readSkillFile(root, name);
    } catch (err) {
      return { ...base, status: 'invalid', reasons: [`cannot read ${SKILL_FILE}: ${(err as Error).message}`] };
    }
    const parsed = parseSkill(text);
    if (!parsed.ok) return { ...base, status: 'invalid', reasons: [parsed.error] };
    const manifest = parsed.manifest;
    if (this.disabled.has(name)) {
      return { ...base, manifest, status: 'disabled', reasons: ['disabled in agents.defaults.disabledSkills'] };
    }
    const unmet = unmetRequirements(manifest.requires, this.requirementContext);
    const why = Object.hasOwn(this.unavailable, name) ? this.unavailable[name] : undefined;
    if (why) unmet.push(why);
    return { ...base, manifest, status: unmet.length > 0 ? 'unavailable' : 'available', reasons: unmet };
  }

  /** Names, sizes and modification times of every SKILL.md: cheap to compute, changes when any skill does. */
  private fingerprint(): string {
    const parts: string[] = [];
    for (const dir of [this.workspaceDir, this.builtinDir]) {
      if (!dir) continue;
      const root = skillRoot(dir);
      for (const { name } of skillDirs(root)) {
        const stat = statQuietly(root, name);
        parts.push(`${dir}/${name}:${stat?.mtimeMs ?? 0}:${stat?.size ?? 0}`);
      }
    }
    return parts.join('\n');
  }
}

/** The loader for a config: its disabled skills, and binaries looked up on the PATH `exec` commands get. */
export function skillsLoaderFor(
  loaded: LoadedConfig,
  env: NodeJS.ProcessEnv,
  builtinDir: string,
  /** Judge disabled skills by their requirements too (the WebUI shows availability and the switch apart). */
  options: { ignoreDisabled?: boolean } = {},
): SkillsLoader {
  const { pathPrepend, pathAppend, allowedEnvKeys } = loaded.config.tools.exec;
  return new SkillsLoader({
    workspace: loaded.workspace,
    builtinDir,
    disabled: options.ignoreDisabled ? [] : loaded.config.agents.defaults.disabledSkills,
    env,
    searchPath: [pathPrepend, env.PATH ?? '', pathAppend].filter(Boolean).join(delimiter),
    commandEnvKeys: [...COMMAND_ENV_KEYS, ...allowedEnvKeys],
    unavailable: toolSkillsOff(loaded),
  });
}

/** Built-in skills about a tool that is switched off: kept out of the prompt (the tool is not there either). */
function toolSkillsOff(loaded: LoadedConfig): Record<string, string> {
  return loaded.config.tools.imageGeneration.enabled
    ? {}
    : { 'image-generation': 'needs tools.imageGeneration.enabled (the generate_image tool is off)' };
}

/**
 * A folder of skills, read through the workspace-file layer rooted at the folder's parent: the sandboxed shell can
 * plant links in `<workspace>/skills`, so a `skills/` folder, skill folder or SKILL.md that is a link out of it is
 * never read (such a skill shows up as invalid, saying why). Links that stay inside still work.
 */
interface SkillRoot {
  wfs: WorkspaceFs;
  rel: string;
  abs: string;
}

function skillRoot(abs: string): SkillRoot {
  return { wfs: new WorkspaceFs(dirname(abs)), rel: basename(abs), abs };
}

function readSkillFile(root: SkillRoot, name: string): string {
  return root.wfs.readTextSync(join(root.rel, name, SKILL_FILE), { maxBytes: MAX_SKILL_BYTES });
}

/** Sub-folders of `root` holding a SKILL.md (or refused on the way, so the listing says why), sorted. */
function skillDirs(root: SkillRoot): { name: string; dir: string }[] {
  let names: string[];
  try {
    names = root.wfs.readdirSync(root.rel).map((entry) => entry.name);
  } catch {
    return [];
  }
  return names
    .filter((name) => !name.startsWith('.'))
    .sort(compareNames)
    .filter((name) => {
      try {
        const rel = join(root.rel, name);
        return root.wfs.statSync(rel)?.isDirectory() && root.wfs.statSync(join(rel, SKILL_FILE))?.isFile();
      } catch (error) {
        return error instanceof WorkspaceFsError;
      }
    })
    .map((name) => ({ name, dir: join(root.abs, name) }));
}

/** Undefined for anything that cannot be looked at (missing, unreadable, a link out). */
function statQuietly(root: SkillRoot, name: string): Stats | undefined {
  try {
    return root.wfs.statSync(join(root.rel, name, SKILL_FILE));
  } catch {
    return undefined;
  }
}

/** Code-point order: the same on every machine, whatever the locale (the prompt must not depend on it). */
function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
