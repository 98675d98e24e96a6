// The published package is bin/ + dist/ + skills/ + templates/: dist/ bundles every library, so an install needs
// no node_modules: the chat-platform SDKs are installed on demand (src/util/on-demand.ts). These tests keep it that way.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterEach, describe, expect, it } from 'vitest';
import { ON_DEMAND_USES } from '../../src/util/on-demand.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  files: string[];
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  onDemandDependencies?: Record<string, string>;
  devDependencies: Record<string, string>;
};

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** Every package that dist/ imports at run time (statically or lazily), as esbuild resolves the built files. */
async function importedPackages(): Promise<string[]> {
  const result = await build({
    entryPoints: [join(ROOT, 'dist', 'main.js'), join(ROOT, 'dist', 'sdk.js')],
    outdir: mkdtempSync(join(tmpdir(), 'nb-imports-')),
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    packages: 'external',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const imports = Object.values(result.metafile.inputs).flatMap((input) => input.imports);
  return [...new Set(imports.filter((i) => i.external && !i.path.startsWith('node:')).map((i) => i.path))];
}

describe('the installed package', () => {
  it('has no runtime dependencies: dist/ imports only Node built-ins and the on-demand channel SDKs', async () => {
    expect(pkg.dependencies ?? {}).toEqual({});
    // Optional dependencies would come along with every default install (150 MB of SDKs): none.
    expect(pkg.optionalDependencies ?? {}).toEqual({});
    const allowed = new Set([...builtinModules, ...Object.keys(pkg.onDemandDependencies ?? {})]);
    const packageName = (s: string) =>
      s
        .split('/')
        .slice(0, s.startsWith('@') ? 2 : 1)
        .join('/');
    const imported = await importedPackages();
    expect(imported).toContain('grammy'); // the scan sees the lazy channel imports
    expect(imported.filter((s) => !allowed.has(packageName(s)))).toEqual([]);
  });

  it('pins every on-demand package at the version the repo tests with (a devDependency)', () => {
    const onDemand = Object.entries(pkg.onDemandDependencies ?? {});
    expect(onDemand.length).toBeGreaterThanOrEqual(8);
    for (const [name, version] of onDemand)
      expect({ name, version: pkg.devDependencies[name] }).toEqual({ name, version });
    // `nanobot channels install <name>` knows every one of them, and nothing else.
    expect(new Set(Object.values(ON_DEMAND_USES).flat())).toEqual(new Set(onDemand.map(([name]) => name)));
  });

  it('answers a one-shot turn with tools from a copy of its files alone, with no node_modules', async () => {
    const install = mkdtempSync(join(tmpdir(), 'nb-pkg-'));
    for (const entry of [...pkg.files, 'package.json'])
      cpSync(join(ROOT, entry), join(install, entry), { recursive: true });
    const home = mkdtempSync(join(tmpdir(), 'nb-home-'));
    fake = await startFakeLLM([
      { toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'hello' } }] },
      { text: 'Wrote a.txt.' },
    ]);
    mkdirSync(join(home, '.nanobot'));
    const config = {
      agents: { defaults: { provider: 'custom', model: 'm' } },
      providers: { custom: { apiKey: 'k', apiBase: `${fake.url}/v1` } },
    };
    writeFileSync(join(home, '.nanobot', 'config.json'), JSON.stringify(config));
    const child = spawn(process.execPath, [join(install, 'bin', 'nanobot.js'), 'agent', '-m', 'write it'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, NODE_PATH: '' },
      cwd: install,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d;
    });
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(stderr).not.toMatch(/Cannot find (package|module)/);
    expect({ code, stdout: stdout.trim() }).toEqual({ code: 0, stdout: 'Wrote a.txt.' });
    expect(readFileSync(join(home, '.nanobot', 'workspace', 'a.txt'), 'utf8')).toBe('hello');
  });
});
