/**
 * Turns what the user gave `nanobot skills install` (a folder, a .tar.gz/.tgz/.tar archive or a git URL) into a local
 * folder to install from. Archives are unpacked and repositories cloned into a temporary folder; an archive entry
 * that would land outside it (absolute path, `..`, a link pointing out, a device file) fails the whole install.
 */
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, posix, resolve } from 'node:path';
import { extract } from 'tar';
import type { NetworkPolicy } from '../security/network.js';
import { UserError } from '../util/errors.js';
import { expandHome } from '../util/fs.js';

export const MAX_SKILL_FILES = 1_000;
export const MAX_SKILL_BYTES = 50 * 1024 * 1024;
const GIT_TIMEOUT_MS = 120_000;
const DOWNLOAD_TIMEOUT_MS = 120_000;
const SOURCE_HINT =
  'Give a skill folder, a .tar.gz archive or a git URL (https://…, ssh://…, git@host:repo, file://…).';
/** Only transports that fetch data; `ext::` and friends run commands and are refused. */
const GIT_URL = /^(?:(?:https?|ssh|git|file):\/\/|[\w.-]+@[\w.-]+:)/i;
const ARCHIVE = /\.(?:tar\.gz|tgz|tar)$/i;
const ARCHIVE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory', 'SymbolicLink', 'Link']);

export interface LocalSource {
  /** The folder that holds the skill (or a repository/archive that contains one). */
  dir: string;
  /** The skill's name when neither the frontmatter nor a sub-folder gives one: the folder, archive or repo name. */
  fallbackName: string;
  /** What the user gave, for messages. */
  label: string;
  /** A temporary folder to delete afterwards. */
  temporary?: string;
}

export interface FetchOptions {
  env?: NodeJS.ProcessEnv;
  /** For `~` in paths. */
  home?: string;
  cwd?: string;
  /**
   * Downloads archive URLs through this policy (private and internal addresses refused unless
   * `tools.ssrfWhitelist` allows them); without it an archive URL is refused.
   */
  network?: NetworkPolicy;
}

export async function fetchSkillSource(source: string, options: FetchOptions = {}): Promise<LocalSource> {
  const given = source.trim();
  if (!given) throw new UserError('No skill source given.', SOURCE_HINT);
  if (GIT_URL.test(given)) {
    if (/^https?:\/\//i.test(given) && URL.canParse(given) && ARCHIVE.test(new URL(given).pathname)) {
      if (options.network) return downloadArchive(given, options.network);
      throw new UserError(
        `${given} is an archive URL; nanobot installs archives from disk.`,
        'Download it first, then install the file.',
      );
    }
    return cloneRepository(given, options.env ?? process.env);
  }
  const path = resolve(options.cwd ?? process.cwd(), expandHome(given, options.home ?? options.env?.HOME ?? homedir()));
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) throw new UserError(`No such file or folder: ${path}`, SOURCE_HINT);
  if (stat.isDirectory()) return { dir: path, fallbackName: basename(path), label: path };
  if (basename(path) === 'SKILL.md') return { dir: dirname(path), fallbackName: basename(dirname(path)), label: path };
  if (ARCHIVE.test(path)) return unpackArchive(path);
  throw new UserError(`${path} is neither a folder nor a .tar.gz/.tgz/.tar archive.`, SOURCE_HINT);
}

async function cloneRepository(url: string, env: NodeJS.ProcessEnv): Promise<LocalSource> {
  const temporary = await mkdtemp(join(tmpdir(), 'nanobot-skill-'));
  const dir = join(temporary, 'repo');
  const args = ['-c', 'protocol.ext.allow=never', 'clone', '--depth', '1', '--quiet', '--', url, dir];
  await new Promise<void>((done, fail) => {
    execFile(
      'git',
      args,
      { env: { ...env, GIT_TERMINAL_PROMPT: '0' }, timeout: GIT_TIMEOUT_MS, windowsHide: true },
      (error, _stdout, stderr) => {
        if (!error) return done();
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
          return fail(
            new UserError('git is not installed.', 'Install git, or download the skill and install its folder.'),
          );
        }
        const reason = stderr.trim().split('\n').at(-1) || error.message;
        fail(new UserError(`git clone ${url} failed: ${reason}`, 'Check the URL and that you can clone it yourself.'));
      },
    );
  }).catch(async (error: unknown) => {
    await removeQuietly(temporary);
    throw error;
  });
  const repoName =
    url
      .replace(/\/+$/, '')
      .split(/[/:]/)
      .at(-1)
      ?.replace(/\.git$/i, '') ?? 'skill';
  return { dir, fallbackName: repoName, label: url, temporary };
}

/** Fetches an archive URL (every hop checked by the network policy, at most MAX_SKILL_BYTES) and unpacks it. */
async function downloadArchive(url: string, network: NetworkPolicy): Promise<LocalSource> {
  const download = await mkdtemp(join(tmpdir(), 'nanobot-skill-download-'));
  try {
    let response: Response;
    try {
      response = await network.fetch(url, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
    } catch (error) {
      throw new UserError(`Cannot download ${url}: ${(error as Error).message}`, SOURCE_HINT);
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel().catch(() => undefined);
      throw new UserError(`Cannot download ${url}: HTTP ${response.status}`, 'Check the URL.');
    }
    const chunks: Uint8Array[] = [];
    let bytes = 0;
    for await (const chunk of response.body) {
      bytes += chunk.byteLength;
      if (bytes > MAX_SKILL_BYTES) {
        await response.body.cancel().catch(() => undefined);
        throw new UserError(`${url} is larger than a skill may be (${MAX_SKILL_BYTES / 1024 / 1024} MB).`, SOURCE_HINT);
      }
      chunks.push(chunk);
    }
    const name = basename(new URL(url).pathname);
    const file = join(download, ARCHIVE.test(name) ? name : 'skill.tar.gz');
    await writeFile(file, Buffer.concat(chunks), { mode: 0o600 });
    const local = await unpackArchive(file);
    return { ...local, label: url };
  } finally {
    await removeQuietly(download);
  }
}

async function unpackArchive(file: string): Promise<LocalSource> {
  const temporary = await mkdtemp(join(tmpdir(), 'nanobot-skill-'));
  const problems: string[] = [];
  let files = 0;
  let bytes = 0;
  try {
    await extract({
      file,
      cwd: temporary,
      strict: true,
      // Checked before anything is written: a refused entry is skipped, and any refusal fails the install below.
      filter: (path, entry) => {
        const problem = archiveEntryProblem(path, entry as ArchiveEntry);
        if (problem) {
          problems.push(problem);
          return false;
        }
        files += 1;
        bytes += (entry as ArchiveEntry).size ?? 0;
        if (files > MAX_SKILL_FILES || bytes > MAX_SKILL_BYTES) {
          problems.push(
            `the archive is larger than a skill may be (${MAX_SKILL_FILES} files, ${MAX_SKILL_BYTES} bytes)`,
          );
          return false;
        }
        return true;
      },
    });
  } catch (error) {
    await removeQuietly(temporary);
    throw new UserError(`Cannot unpack ${file}: ${(error as Error).message}`, 'Is it a .tar.gz, .tgz or .tar file?');
  }
  if (problems.length > 0) {
    await removeQuietly(temporary);
    const shown = [...new Set(problems)].slice(0, 5).join('; ');
    throw new UserError(
      `Refusing to install ${file}: ${shown}`,
      'A skill archive may only contain files under one folder.',
    );
  }
  const fallbackName = basename(file).replace(ARCHIVE, '');
  return { dir: temporary, fallbackName, label: file, temporary };
}

interface ArchiveEntry {
  type?: string;
  size?: number;
  linkpath?: string;
}

/** Why an archive entry may not be unpacked, or undefined when it is fine. */
export function archiveEntryProblem(path: string, entry: ArchiveEntry): string | undefined {
  const type = entry.type ?? 'File';
  if (!ARCHIVE_TYPES.has(type)) return `${path} is a ${type}, not a file or folder`;
  if (escapes(path)) return `${path} points outside the skill folder`;
  if (type === 'SymbolicLink' || type === 'Link') {
    const target = entry.linkpath ?? '';
    // A symbolic link is relative to its own folder, a hard link to the archive root.
    const resolved = type === 'SymbolicLink' ? posix.join(posix.dirname(toPosix(path)), toPosix(target)) : target;
    if (!target || isAbsolute(target) || posix.isAbsolute(toPosix(target)) || escapes(resolved)) {
      return `${path} links to ${target || '(nothing)'}, outside the skill folder`;
    }
  }
  return undefined;
}

function escapes(path: string): boolean {
  const normal = toPosix(path);
  if (posix.isAbsolute(normal) || /^[A-Za-z]:/.test(normal)) return true;
  return posix.normalize(normal).split('/').includes('..');
}

function toPosix(path: string): string {
  return path.replace(/\\/g, '/');
}

export async function removeQuietly(path: string): Promise<void> {
  if (existsSync(path)) await rm(path, { recursive: true, force: true }).catch(() => undefined);
}
