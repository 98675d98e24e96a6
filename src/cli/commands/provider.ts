/**
 * `nanobot provider login <github-copilot|openai-codex> [--set-main] [-m MODEL]` and `nanobot provider logout <name>`:
 * sign in to a subscription provider; the tokens go to `<config dir>/auth/<name>.json`, readable only by the user.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { updateConfigFile } from '../../config/onboard.js';
import type { SleepFn } from '../../providers/retry.js';
import { UserError } from '../../util/errors.js';
import type { GlobalOptions } from '../main.js';
import { setup } from '../setup.js';

export interface ProviderLoginFlags {
  /** Make this provider (and `model`) the default in the config. */
  setMain?: boolean;
  model?: string;
  /** commander's `--no-browser` sets this to false. */
  browser?: boolean;
}

export interface ProviderCliDeps {
  env?: NodeJS.ProcessEnv;
  out?: (line: string) => void;
  fetch?: typeof globalThis.fetch;
  sleep?: SleepFn;
}

const SUPPORTED = 'github-copilot, openai-codex';

export async function runProviderLogin(
  name: string,
  opts: GlobalOptions & ProviderLoginFlags,
  deps: ProviderCliDeps = {},
): Promise<void> {
  const env = deps.env ?? process.env;
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const oauth = await import('../../providers/oauth/index.js');
  const def = oauth.findOAuthProvider(name);
  if (!def) throw unknownProvider(name);
  const { loaded } = await setup(opts, env);
  const store = new oauth.TokenStore(join(loaded.dataDir, 'auth'));
  const print = (line: string) => out(line);
  let token: Awaited<ReturnType<typeof oauth.loginFunctions.github_copilot>>;
  if (def.name === 'github_copilot') {
    token = await oauth.loginFunctions.github_copilot(store, env, {
      print,
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
      ...(deps.sleep ? { sleep: deps.sleep } : {}),
    });
  } else {
    // Pasted lines are read while the callback server waits; closing the reader lets the process exit.
    const lines = createInterface({ input: process.stdin, terminal: false });
    try {
      token = await oauth.loginFunctions.openai_codex(store, env, {
        print,
        input: lines,
        ...(deps.fetch ? { fetch: deps.fetch } : {}),
        ...(opts.browser !== false && process.stdout.isTTY ? { openBrowser } : {}),
      });
    } finally {
      lines.close();
    }
  }
  const who = token.accountId ? ` as ${token.accountId}` : '';
  out(`Signed in to ${def.label}${who}. Token saved to ${store.pathOf(def.tokenFile)} (readable only by you).`);
  if (opts.setMain || opts.model) {
    const model = opts.model ?? def.defaultModel;
    await updateConfigFile(loaded.configPath, (raw) => {
      // updateConfigFile fills in every default block first, so agents.defaults exists.
      const defaults = (raw.agents as { defaults: Record<string, unknown> }).defaults;
      defaults.provider = def.name;
      defaults.model = model;
      defaults.modelPreset = null;
    });
    out(`Default model is now ${model} via ${def.label} (${loaded.configPath}).`);
  } else {
    out(
      `Use it with agents.defaults.provider = "${def.name}" and a model such as "${def.defaultModel}", ` +
        `or run again with --set-main.`,
    );
  }
}

export async function runProviderLogout(name: string, opts: GlobalOptions, deps: ProviderCliDeps = {}): Promise<void> {
  const env = deps.env ?? process.env;
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const oauth = await import('../../providers/oauth/index.js');
  const def = oauth.findOAuthProvider(name);
  if (!def) throw unknownProvider(name);
  const { loaded } = await setup(opts, env);
  const store = new oauth.TokenStore(join(loaded.dataDir, 'auth'));
  const removed = await store.remove(def.tokenFile);
  out(removed ? `Signed out of ${def.label}; its token was deleted.` : `${def.label} was not signed in.`);
  if (removed && loaded.config.agents.defaults.provider.replace(/-/g, '_') === def.name) {
    out(`Note: agents.defaults.provider is still "${def.name}"; sign in again or choose another provider.`);
  }
}

function unknownProvider(name: string): UserError {
  const normalized = name.trim().toLowerCase().replace(/_/g, '-');
  if (normalized === 'xai-grok') {
    return new UserError('Signing in to xAI Grok is not supported yet.', `Supported: ${SUPPORTED}.`);
  }
  return new UserError(
    `"${name}" does not sign in with OAuth.`,
    `Supported: ${SUPPORTED}. API-key providers are set with providers.<name>.apiKey in the config.`,
  );
}

/** Best effort: a desktop opens the page; anywhere else the printed address is enough. */
function openBrowser(url: string): void {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '', url]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // No opener on this machine: the address is printed above.
  }
}
