/**
 * `nanobot skills install`: copies a skill into `<workspace>/skills/<name>/` after checking its SKILL.md. Nothing the
 * skill contains is run. An installed skill of the same name is only replaced with `force`; the copy is staged next
 * to the target and renamed into place, so an interrupted install leaves the old skill or the new one, never a mix.
 * Symbolic links are followed only within the skill; one pointing outside fails the install. `previewSkill` runs the
 * same fetch and checks and writes nothing (the WebUI shows it before the user confirms); its digest, passed back,
 * makes the install refuse a source that changed in between.
 */
import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { isPathInside } from '../security/workspace.js';
import { WorkspaceFs } from '../security/workspace-fs.js';
import { UserError } from '../util/errors.js';
import { parseSkill, SKILL_FILE, type SkillManifest } from './frontmatter.js';
import { type SuggestedCommand, suggestedCommands } from './install-commands.js';
import {
  type FetchOptions,
  fetchSkillSource,
  type LocalSource,
  MAX_SKILL_BYTES,
  MAX_SKILL_FILES,
  removeQuietly,
} from './install-source.js';

/** Letters, digits, `-`, `_` and `.`, starting with a letter or digit: safe as a folder name and after `$`. */
const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const SEARCH_DEPTH = 3;
const SKIPPED_DIRS = new Set(['.git', 'node_modules']);
const FRONTMATTER_HINT =
  'SKILL.md must start with a frontmatter block:\n---\nname: my-skill\ndescription: What it does and when to use it.\n---';

/** Whether `name` can be a skill's folder name (and be used after `$`). */
export function isSkillName(name: string): boolean {
  return SKILL_NAME.test(name) && !name.includes('..');
}

/** The skill is installed already and `force` was not given. */
export class SkillExistsError extends UserError {
  constructor(
    readonly skillName: string,
    target: string,
  ) {
    super(`A skill named "${skillName}" is already installed at ${target}.`, 'Pass --force to replace it.');
    this.name = 'SkillExistsError';
  }
}

export interface InstallOptions extends FetchOptions {
  workspace: string;
  /** Replace an installed skill of the same name. */
  force?: boolean;
  /**
   * The digest a preview showed the user: the install is refused when the source now holds anything else (an archive
   * URL or folder that changed between "check" and "install"), so what was reviewed is what gets installed.
   */
  expectedDigest?: string;
}

export interface InstalledFile {
  path: string;
  bytes: number;
}

/** What installing `source` would do, computed without writing anything into the workspace. */
export interface SkillPreview {
  name: string;
  /** Where it would go: `<workspace>/skills/<name>`. */
  dir: string;
  /** A skill of this name is installed already (installing needs `force`). */
  exists: boolean;
  files: InstalledFile[];
  manifest: SkillManifest;
  /** Commands the skill asks the user to run; shown, never run. */
  commands: SuggestedCommand[];
  /** sha256 over every file's path, mode and bytes: pass it back as `expectedDigest`. */
  digest: string;
}

export interface InstallReport extends Omit<SkillPreview, 'exists'> {
  /** An installed skill of this name was replaced (`force`). */
  replaced: boolean;
}

/** The install was given a preview's digest and the source no longer matches it. */
export class SkillChangedError extends UserError {
  constructor(readonly skillName: string) {
    super(
      `The skill "${skillName}" changed since it was checked; nothing was installed.`,
      'Check it again and review what it asks for before installing.',
    );
    this.name = 'SkillChangedError';
  }
}

/** Fetches and checks `source` as `installSkill` does, and says what it would install; writes nothing. */
export async function previewSkill(source: string, options: InstallOptions): Promise<SkillPreview> {
  return withSource(source, options, async (local) => publicPreview(planFrom(local, options)));
}

export async function installSkill(source: string, options: InstallOptions): Promise<InstallReport> {
  return withSource(source, options, async (local) => installPlan(planFrom(local, options), options));
}

async function withSource<T>(source: string, options: InstallOptions, use: (local: LocalSource) => Promise<T>) {
  const local = await fetchSkillSource(source, options);
  try {
    return await use(local);
  } finally {
    if (local.temporary) await removeQuietly(local.temporary);
  }
}

interface SkillPlan extends SkillPreview {
  /** The bytes to write, read once: what the digest covers is exactly what lands. */
  contents: { path: string; data: Buffer; mode: number }[];
}

function publicPreview({ contents: _contents, ...preview }: SkillPlan): SkillPreview {
  return preview;
}

function planFrom(local: LocalSource, options: InstallOptions): SkillPlan {
  const root = findSkillRoot(local);
  const skillFile = join(root, SKILL_FILE);
  const parsed = parseSkill(readFileSync(skillFile, 'utf8'));
  const shownFile =
    root === local.dir ? `${local.label} (${SKILL_FILE})` : `${local.label}: ${relative(local.dir, skillFile)}`;
  if (!parsed.ok) throw new UserError(`Invalid SKILL.md in ${shownFile}: ${parsed.error}`, FRONTMATTER_HINT);
  const manifest = parsed.manifest;
  const name = skillName(manifest.declaredName, root === local.dir ? local.fallbackName : lastSegment(root));
  if (!isSkillName(name)) {
    throw new UserError(
      `"${name}" cannot be a skill name.`,
      'Use letters, digits, "-", "_" or "." (at most 64), starting with a letter or digit, in the frontmatter name.',
    );
  }
  const files = collectFiles(root);
  const contents = files.map((file) => ({
    path: file.path,
    data: readFileSync(file.source),
    mode: statSync(file.source).mode & 0o777,
  }));
  const hash = createHash('sha256');
  for (const file of contents) {
    hash.update(`${file.path}\0${file.mode.toString(8)}\0${file.data.length}\0`);
    hash.update(file.data);
  }
  const wfs = new WorkspaceFs(options.workspace);
  return {
    name,
    dir: join(options.workspace, 'skills', name),
    exists: wfs.lstatSync(`skills/${name}`) !== undefined,
    files: contents.map(({ path, data }) => ({ path, bytes: data.length })),
    manifest,
    commands: suggestedCommands(manifest),
    digest: hash.digest('hex'),
    contents,
  };
}

function installPlan(plan: SkillPlan, options: InstallOptions): InstallReport {
  const { name, exists } = plan;
  if (options.expectedDigest !== undefined && options.expectedDigest !== plan.digest) {
    throw new SkillChangedError(name);
  }
  if (exists && !options.force) throw new SkillExistsError(name, plan.dir);
  // Into the workspace through the layer: a skills/ (or skills/<name>) link planted by the sandboxed shell is refused
  // or replaced as a link, never written through.
  const wfs = new WorkspaceFs(options.workspace);
  const rel = `skills/${name}`;
  wfs.mkdirSync('skills');
  const token = randomBytes(4).toString('hex');
  const staging = `skills/.installing-${name}-${token}`;
  try {
    wfs.mkdirSync(staging);
    for (const file of plan.contents) {
      wfs.writeFileAtomicSync(`${staging}/${file.path}`, file.data, { mode: file.mode });
    }
    if (exists) {
      const retired = `skills/.replaced-${name}-${token}`;
      wfs.renameSync(rel, retired);
      wfs.renameSync(staging, rel);
      wfs.rmSync(retired);
    } else {
      wfs.renameSync(staging, rel);
    }
  } catch (error) {
    try {
      wfs.rmSync(staging);
    } catch {
      // Best effort: the staging folder is hidden and replaced on the next install.
    }
    throw error;
  }
  const { contents: _contents, exists: _exists, ...report } = plan;
  return { ...report, replaced: exists };
}

/** The folder holding SKILL.md: the source itself, or the only skill folder within a few levels of it. */
function findSkillRoot(local: LocalSource): string {
  if (statSync(join(local.dir, SKILL_FILE), { throwIfNoEntry: false })?.isFile()) return local.dir;
  const found: string[] = [];
  const walk = (dir: string, depth: number): void => {
    if (depth > SEARCH_DEPTH) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory() || SKIPPED_DIRS.has(entry.name)) continue;
      const child = join(dir, entry.name);
      if (statSync(join(child, SKILL_FILE), { throwIfNoEntry: false })?.isFile()) found.push(child);
      else walk(child, depth + 1);
    }
  };
  walk(local.dir, 1);
  const [only, ...more] = found;
  if (!only) throw new UserError(`No ${SKILL_FILE} found in ${local.label}.`, FRONTMATTER_HINT);
  if (more.length > 0) {
    const names = found.map((dir) => relative(local.dir, dir)).join(', ');
    throw new UserError(
      `${local.label} holds several skills (${names}).`,
      'Install them one at a time: give the folder of the one you want.',
    );
  }
  return only;
}

interface SourceFile extends InstalledFile {
  /** The real file to copy (a symbolic link within the skill is copied as the file it points to). */
  source: string;
}

/** Every file of the skill (without `.git`), refusing links that lead outside it and skills too large to be one. */
function collectFiles(root: string): SourceFile[] {
  const realRoot = realpathSync(root);
  const files: SourceFile[] = [];
  let bytes = 0;
  const add = (path: string, source: string, size: number) => {
    files.push({ path, source, bytes: size });
    bytes += size;
    if (files.length > MAX_SKILL_FILES || bytes > MAX_SKILL_BYTES) {
      throw new UserError(
        `This is too large for a skill (more than ${MAX_SKILL_FILES} files or ${MAX_SKILL_BYTES / 1024 / 1024} MB).`,
        'A skill is a SKILL.md with a few scripts or references; install the tool it needs separately.',
      );
    }
  };
  const walk = (dir: string): void => {
    const entries = readdirSync(dir).sort();
    for (const name of entries) {
      const path = join(dir, name);
      const shown = relative(root, path).split(sep).join('/');
      const stat = lstatSync(path);
      if (stat.isDirectory()) {
        if (name !== '.git') walk(path);
      } else if (stat.isFile()) {
        add(shown, path, stat.size);
      } else if (stat.isSymbolicLink()) {
        const target = linkTarget(path, shown);
        if (!isPathInside(target, realRoot)) {
          throw new UserError(
            `Refusing to install: ${shown} links outside the skill (${target}).`,
            'Copy the file into the skill instead.',
          );
        }
        const targetStat = statSync(target);
        if (!targetStat.isFile()) {
          throw new UserError(
            `Refusing to install: ${shown} links to a folder.`,
            'Replace the link with the folder itself.',
          );
        }
        add(shown, target, targetStat.size);
      } else {
        throw new UserError(
          `Refusing to install: ${shown} is not a regular file.`,
          'A skill holds only files and folders.',
        );
      }
    }
  };
  walk(root);
  return files;
}

function linkTarget(path: string, shown: string): string {
  try {
    return realpathSync(path);
  } catch {
    throw new UserError(
      `Refusing to install: ${shown} is a broken symbolic link.`,
      'Remove it or replace it with the file.',
    );
  }
}

/**
 * The frontmatter name when it can be a folder name, else the folder's own name: some published skills have display
 * names ("PDF Tools"). A name with a path in it is kept, so that the install is refused rather than quietly renamed.
 */
function skillName(declared: string | undefined, folder: string): string {
  if (declared === undefined || SKILL_NAME.test(declared) || /[/\\]|\.\./.test(declared)) return declared ?? folder;
  return folder;
}

function lastSegment(dir: string): string {
  return dir.split(sep).filter(Boolean).at(-1) ?? dir;
}
