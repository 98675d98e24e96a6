/**
 * Skills of nanobot's WebUI (`/api/webui/skills…`, `skill.*`): the workspace's and the built-in skills with whether
 * they can run here (missing binaries and env shown) and whether they are switched on
 * (`agents.defaults.disabledSkills`); switching one on or off; deleting one the user installed (never a built-in,
 * never anything outside `<workspace>/skills`); installing one from a folder, a .tar.gz or a git URL through the
 * same code and checks as `nanobot skills install` (the commands it asks for are listed, never run), after an optional
 * `skill.preview` that shows them first and whose digest pins the install to what was shown.
 * nanobot's skills marketplace (search, trending, trends, install by provider) is not in this version: 501.
 */
import { randomBytes } from 'node:crypto';
import { isAbsolute } from 'node:path';
import { createNetworkPolicy } from '../security/network.js';
import { WorkspaceFs } from '../security/workspace-fs.js';
import type { SkillManifest } from '../skills/frontmatter.js';
import {
  type InstallOptions,
  installSkill,
  isSkillName,
  previewSkill,
  SkillChangedError,
  SkillExistsError,
} from '../skills/install.js';
import { type Skill, type SkillsLoader, skillsLoaderFor } from '../skills/loader.js';
import { UserError } from '../util/errors.js';
import { BUILTIN_SKILLS } from '../util/paths.js';
import { type ActionHandler, type RouteHandler, WebuiApiError, type WebuiApiModule } from './api.js';
import { childOf, configOf } from './config-tree.js';

const MARKETPLACE_UNSUPPORTED =
  'The skills marketplace is not in this version: install a skill from a folder path, a .tar.gz file or a git URL';
const GIT_URL = /^(?:(?:https?|ssh|git|file):\/\/|[\w.-]+@[\w.-]+:)/i;
const DIGEST = /^[0-9a-f]{64}$/;
type Context = Parameters<ActionHandler>[0];

/** The loader over the live config; disabled skills are still judged by their requirements. */
function loaderOf(context: Context, builtinDir = BUILTIN_SKILLS): SkillsLoader {
  return skillsLoaderFor(configOf(context.backend).loaded(), process.env, builtinDir, { ignoreDisabled: true });
}

function disabledOf(context: Context): Set<string> {
  return new Set(configOf(context.backend).loaded().config.agents.defaults.disabledSkills);
}

function summary(skill: Skill, disabled: ReadonlySet<string>): Record<string, unknown> {
  const available = skill.status === 'available';
  return {
    name: skill.name,
    description: skill.manifest?.description || skill.name,
    source: skill.source,
    enabled: !disabled.has(skill.name),
    deletable: skill.source === 'workspace',
    available,
    ...(available ? {} : { unavailable_reason: skill.reasons.join('; ') }),
  };
}

/** Workspace skills first, then built-ins, each by name (as nanobot lists them). */
function skillsPayload(context: Context): { skills: Record<string, unknown>[] } {
  const disabled = disabledOf(context);
  const skills = loaderOf(context)
    .list()
    .sort((a, b) => Number(a.source !== 'workspace') - Number(b.source !== 'workspace'));
  return { skills: skills.map((skill) => summary(skill, disabled)) };
}

/** What a skill needs and what of it is missing here (upstream's `SkillRequirements`). */
function requirementsOf(loader: SkillsLoader, manifest: SkillManifest | undefined): Record<string, string[]> {
  const missing = loader.missingRequirements({ manifest });
  const requires = manifest?.requires;
  return {
    bins: [...(requires?.bins ?? []), ...(requires?.anyBins ?? [])],
    env: [...(requires?.env ?? [])],
    missing_bins: missing.bins,
    missing_env: missing.env,
  };
}

const detail: RouteHandler = async (context, { segments }) => {
  const loader = loaderOf(context);
  const skill = loader.get(segments.name ?? '');
  if (!skill) throw new WebuiApiError(404, 'skill not found');
  return {
    ...summary(skill, disabledOf(context)),
    requirements: requirementsOf(loader, skill.manifest),
    install_options: (skill.manifest?.install ?? []).map((step, index) => ({
      id: step.id ?? `install-${index + 1}`,
      kind: step.kind ?? 'command',
      label: step.label ?? step.command,
      command: step.command,
    })),
    raw_markdown: safeInstructions(loader, skill),
  };
};

function safeInstructions(loader: SkillsLoader, skill: Skill): string {
  try {
    return loader.readInstructions(skill);
  } catch {
    return '';
  }
}

/** A skill the loader lists, by its exact name; 400 for a name no skill can have, 404 for an unknown one. */
function existingSkill(context: Context, value: unknown): Skill {
  if (typeof value !== 'string' || !value.trim()) throw new WebuiApiError(400, 'missing skill name');
  const name = value.trim();
  if (!isSkillName(name)) throw new WebuiApiError(400, 'invalid skill name');
  const skill = loaderOf(context).get(name);
  if (!skill) throw new WebuiApiError(404, 'skill not found');
  return skill;
}

function booleanOf(value: unknown, field: string): boolean {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new WebuiApiError(400, `${field} must be true or false`);
}

/** `agents.defaults.disabledSkills` of the file's tree, changed by `change` and written back sorted. */
function editDisabled(raw: Record<string, unknown>, change: (names: Set<string>) => void): void {
  const defaults = childOf(childOf(raw, 'agents'), 'defaults');
  const current = Array.isArray(defaults.disabledSkills) ? defaults.disabledSkills : [];
  const names = new Set(current.filter((name): name is string => typeof name === 'string'));
  change(names);
  defaults.disabledSkills = [...names].sort();
}

const update: ActionHandler = async (context, payload) => {
  const skill = existingSkill(context, payload.name);
  const enabled = booleanOf(payload.enabled, 'enabled');
  await configOf(context.backend).update((raw) =>
    editDisabled(raw, (names) => (enabled ? names.delete(skill.name) : names.add(skill.name))),
  );
  return { ...skillsPayload(context), last_action: { name: skill.name, enabled, deleted: false } };
};

/**
 * Moves the folder aside inside `skills/` (through the workspace-file layer: a planted link is moved as a link,
 * never followed), drops the name from disabledSkills, then removes the folder; a failed config write puts it back.
 */
const remove: ActionHandler = async (context, payload) => {
  const skill = existingSkill(context, payload.name);
  if (skill.source !== 'workspace') throw new WebuiApiError(403, 'built-in skills cannot be deleted');
  const wfs = new WorkspaceFs(configOf(context.backend).loaded().workspace);
  const rel = `skills/${skill.name}`;
  if (!wfs.lstatSync(rel)) throw new WebuiApiError(404, 'skill directory was not found');
  const staged = `skills/.deleting-${skill.name}-${randomBytes(4).toString('hex')}`;
  wfs.renameSync(rel, staged);
  try {
    if (disabledOf(context).has(skill.name)) {
      await configOf(context.backend).update((raw) => editDisabled(raw, (names) => names.delete(skill.name)));
    }
  } catch (error) {
    wfs.renameSync(staged, rel);
    throw error;
  }
  wfs.rmSync(staged);
  return { ...skillsPayload(context), last_action: { name: skill.name, enabled: false, deleted: true } };
};

/** The source as the WebUI may give it: a git URL, or an absolute (or `~/`) path, never one relative to the gateway. */
function installSource(payload: Readonly<Record<string, unknown>>): string {
  // (an archive URL is downloaded under the same network rules as web_fetch: tools.ssrfWhitelist)
  const source = payload.source;
  if (typeof source !== 'string' || !source.trim() || source.length > 4096) {
    throw new WebuiApiError(400, 'missing source: give a skill folder path, a .tar.gz file or a git URL');
  }
  const given = source.trim();
  if (!GIT_URL.test(given) && !isAbsolute(given) && !given.startsWith('~/')) {
    throw new WebuiApiError(400, `"${given}" is not an absolute path or a git URL`);
  }
  return given;
}

function installOptions(context: Context, payload: Readonly<Record<string, unknown>>): InstallOptions {
  const loaded = configOf(context.backend).loaded();
  const digest = payload.digest;
  if (digest !== undefined && (typeof digest !== 'string' || !DIGEST.test(digest))) {
    throw new WebuiApiError(400, 'digest must be the 64 hex digits skill.preview gave');
  }
  return {
    workspace: loaded.workspace,
    env: process.env,
    home: loaded.home,
    force: payload.force === undefined ? false : booleanOf(payload.force, 'force'),
    network: createNetworkPolicy({ whitelist: loaded.config.tools.ssrfWhitelist }),
    ...(typeof digest === 'string' ? { expectedDigest: digest } : {}),
  };
}

/** The install module's refusals as answers: the user's mistake is a 400, a source changed since preview a 409. */
async function refusalsAsAnswers<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const status = error instanceof SkillChangedError ? 409 : 400;
    if (error instanceof UserError) {
      throw new WebuiApiError(status, error.hint ? `${error.message} ${error.hint}` : error.message);
    }
    throw error;
  }
}

function refuseMarketplace(payload: Readonly<Record<string, unknown>>): void {
  if (typeof payload.provider === 'string' && payload.provider.trim()) {
    throw new WebuiApiError(501, MARKETPLACE_UNSUPPORTED);
  }
}

/**
 * What `skill.install` would do with the same payload, through the same fetch and checks, writing nothing: the
 * skill's name, files, requirements and the commands it asks for (listed, never run), and the digest to install
 * exactly this (nanobot's WebUI has no such step; ours shows it before the user confirms).
 */
const preview: ActionHandler = async (context, payload) => {
  refuseMarketplace(payload);
  const source = installSource(payload);
  const options = installOptions(context, payload);
  const found = await refusalsAsAnswers(() => previewSkill(source, options));
  const installed = loaderOf(context).get(found.name);
  return {
    preview: {
      name: found.name,
      description: found.manifest.description,
      already_installed: found.exists,
      replaces_builtin: !found.exists && installed?.source === 'builtin',
      files: found.files,
      requirements: requirementsOf(loaderOf(context), found.manifest),
      commands: found.commands,
      digest: found.digest,
    },
  };
};

const install: ActionHandler = async (context, payload) => {
  refuseMarketplace(payload);
  const source = installSource(payload);
  const options = installOptions(context, payload);
  const report = await refusalsAsAnswers(() =>
    installSkill(source, options).catch((error: unknown) => {
      if (error instanceof SkillExistsError) return error;
      throw error;
    }),
  );
  if (report instanceof SkillExistsError) {
    return {
      ...skillsPayload(context),
      last_action: { installed: false, already_installed: true, name: report.skillName },
    };
  }
  return {
    ...skillsPayload(context),
    last_action: {
      installed: true,
      already_installed: false,
      name: report.name,
      replaced: report.replaced,
      files: report.files,
      // What the skill asks its user to run: shown so they can review it; nothing here ran any of it.
      commands: report.commands,
    },
  };
};

const marketplace: RouteHandler = async () => {
  throw new WebuiApiError(501, MARKETPLACE_UNSUPPORTED);
};

export const skillsModule: WebuiApiModule = {
  routes: {
    // Before `:name`: the first pattern that matches answers.
    'webui/skills/search': marketplace,
    'webui/skills/trending': marketplace,
    'webui/skills/trends': marketplace,
    'webui/skills': async (context) => skillsPayload(context),
    'webui/skills/:name': detail,
  },
  actions: { 'skill.update': update, 'skill.delete': remove, 'skill.preview': preview, 'skill.install': install },
};
