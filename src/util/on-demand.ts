/**
 * Packages installed on demand: the chat-platform SDKs (and Bedrock's), which most users never need and which are
 * ~140 MB together, so neither the package nor a default install carries them. package.json's
 * `onDemandDependencies` names each one with its pinned version (the build keeps them out of dist/; the repo has them
 * as devDependencies, so a clone's tests find them in its node_modules).
 *
 * Where they go: ~/.nanobot/packages (its own package.json + node_modules), owned by the user and kept across
 * upgrades of nanobot: a global install's prefix is often root-owned, and `npm install -g` of a new version would
 * wipe whatever sat in the package's own node_modules. A lazily imported SDK is looked up the usual way first (next to
 * the package: a clone, or one installed beside it), then in that folder through a one-line loader module written
 * there at install time, so Node resolves the SDK (its `exports`, its own dependencies) from inside that folder.
 * Nothing is ever installed without the user's consent (`nanobot channels install`, or a y/N prompt).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { UserError } from './errors.js';
import { packageJson } from './paths.js';

/** What each on-demand package is for, shown when it is missing. */
export const ON_DEMAND_USES: Readonly<Record<string, readonly string[]>> = {
  telegram: ['grammy'],
  discord: ['discord.js'],
  slack: ['@slack/bolt'],
  feishu: ['@larksuiteoapi/node-sdk'],
  matrix: ['matrix-js-sdk', '@matrix-org/matrix-sdk-crypto-wasm', 'fake-indexeddb'],
  mattermost: ['@mattermost/client'],
  wecom: ['@wecom/aibot-node-sdk'],
  mochat: ['socket.io-client', 'socket.io-msgpack-parser'],
  dingtalk: ['dingtalk-stream'],
  msteams: ['jose'],
  whatsapp: ['baileys'],
  email: ['imapflow', 'nodemailer'],
  bedrock: ['@aws-sdk/client-bedrock-runtime'],
};

const LOADER_FILE = 'load.mjs';
/** The loader module: `import()` from inside the folder, so resolution starts at its node_modules. */
const LOADER_SOURCE =
  '// Written by nanobot: imports a package from this folder.\nexport default (name) => import(name);\n';

/** ~/.nanobot/packages: one per user, shared by every config (`-c`) of that user. */
export function packagesDir(home = homedir()): string {
  return join(home, '.nanobot', 'packages');
}

const PinnedVersions = z.object({ onDemandDependencies: z.record(z.string(), z.string()).default({}) });

/** The pinned `name@version` of an on-demand package (package.json), or the bare name if it is not listed. */
export function pinnedSpec(name: string): string {
  const parsed = PinnedVersions.safeParse(packageJson());
  const version = parsed.success ? parsed.data.onDemandDependencies[name] : undefined;
  return version ? `${name}@${version}` : name;
}

/** Is this package where nanobot looks for it: beside the package (a clone, a local install) or in ~/.nanobot/packages? */
export function packageInstalled(name: string, home: string): boolean {
  try {
    import.meta.resolve(name);
    return true;
  } catch {
    return existsSync(join(packagesDir(home), 'node_modules', name, 'package.json'));
  }
}

/** The on-demand packages `name` (a channel, `bedrock`) needs that are not installed. */
export function missingPackages(name: string, home: string = homedir()): string[] {
  return (ON_DEMAND_USES[name.toLowerCase()] ?? []).filter((pkg) => !packageInstalled(pkg, home));
}

/** The package a specifier names (`matrix-js-sdk/lib/logger.js` → `matrix-js-sdk`, `@slack/bolt` stays). */
export function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return parts.slice(0, specifier.startsWith('@') ? 2 : 1).join('/');
}

/** A missing package: names what needs it and the command that installs it. */
export class MissingPackageError extends UserError {
  constructor(
    readonly packageName: string,
    readonly feature: string,
    readonly installWith: string,
  ) {
    super(
      `${feature} needs the ${packageName} package, which is not installed (optional packages are installed on demand).`,
      `Install it with: ${installWith}`,
    );
  }
}

export interface OnDemandImport<T> {
  /** The import written out (`() => import('grammy')`), so types and the bundler's externals follow it. */
  direct: () => Promise<T>;
  specifier: string;
  /** "The Telegram channel". */
  feature: string;
  /** The command that installs it (`nanobot channels install telegram`). */
  installWith: string;
  home?: string;
}

/** Imports an on-demand package: next to nanobot first, then from ~/.nanobot/packages; else MissingPackageError. */
export async function importOnDemand<T>(spec: OnDemandImport<T>): Promise<T> {
  try {
    return await spec.direct();
  } catch (err) {
    if (!isNotFound(err, packageOf(spec.specifier))) throw loadFailed(spec, err);
  }
  const loader = join(packagesDir(spec.home), LOADER_FILE);
  const installed = join(packagesDir(spec.home), 'node_modules', packageOf(spec.specifier), 'package.json');
  if (!existsSync(loader) || !existsSync(installed))
    throw new MissingPackageError(packageOf(spec.specifier), spec.feature, spec.installWith);
  try {
    const load = (await import(pathToFileURL(loader).href)) as { default: (name: string) => Promise<unknown> };
    // The same module `direct` would have given: only where Node found it differs.
    return (await load.default(spec.specifier)) as T;
  } catch (err) {
    throw loadFailed(spec, err);
  }
}

function isNotFound(err: unknown, name: string): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  // "Cannot find package 'grammy'": the package itself, not one of its own dependencies.
  const message = err instanceof Error ? err.message : '';
  return message.includes(`'${name}'`) || message.includes(`"${name}"`) || !message.includes("'");
}

function loadFailed(spec: OnDemandImport<unknown>, err: unknown): UserError {
  const why = err instanceof Error ? err.message.split('\n')[0] : String(err);
  return new UserError(
    `${spec.feature} could not load the ${packageOf(spec.specifier)} package: ${why}`,
    `Reinstall it with: ${spec.installWith}`,
  );
}

export interface InstallOptions {
  home?: string;
  env?: NodeJS.ProcessEnv;
  /** The npm executable (default `npm` on PATH). */
  npm?: string;
  /** Where npm's output goes (default: inherited, so the user sees its progress). */
  stdio?: 'inherit' | 'ignore';
}

/** Installs the pinned versions of `names` into ~/.nanobot/packages with npm; resolves with npm's exit code. */
export async function installOnDemand(names: readonly string[], options: InstallOptions = {}): Promise<void> {
  const env = options.env ?? process.env;
  const dir = packagesDir(options.home);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!existsSync(join(dir, 'package.json')))
    writeFileSync(
      join(dir, 'package.json'),
      `${JSON.stringify({ name: 'nanobot-packages', private: true, description: 'Installed by nanobot on demand' }, null, 2)}\n`,
    );
  writeFileSync(join(dir, LOADER_FILE), LOADER_SOURCE);
  const args = ['install', '--prefix', dir, '--no-audit', '--no-fund', '--save-exact', ...names.map(pinnedSpec)];
  const npm = options.npm ?? (process.platform === 'win32' ? 'npm.cmd' : 'npm');
  const code = await new Promise<number | string>((resolve) => {
    const child = spawn(npm, args, { env, stdio: ['ignore', options.stdio ?? 'inherit', options.stdio ?? 'inherit'] });
    child.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    child.on('close', (exit) => resolve(exit ?? 1));
  });
  if (code === 0) return;
  const manual = `npm ${args.map((a) => (a.includes(' ') ? `"${a}"` : a)).join(' ')}`;
  throw new UserError(
    code === 'ENOENT' ? 'npm was not found on PATH, so nothing was installed.' : `npm install failed (${code}).`,
    `Run it yourself: ${manual}`,
  );
}
