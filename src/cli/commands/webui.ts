/**
 * `nanobot webui`: opens the WebUI in the browser, starting the gateway in the background first when none runs.
 * The token travels in the URL fragment (`#token=…`), which browsers never send to a server, so it stays out of
 * every log; `--no-open` prints that link instead of opening it.
 */
import { spawn } from 'node:child_process';
import { parseWebSocketSettings } from '../../channels/websocket/index.js';
import { hostForUrl } from '../../channels/websocket/settings.js';
import { resolveToken, tokenFilePath } from '../../channels/websocket/token.js';
import { isProcessAlive, logFilePath, readState } from '../../gateway/state-file.js';
import { UserError } from '../../util/errors.js';
import type { GlobalOptions } from '../main.js';
import { setup } from '../setup.js';
import { spawnBackgroundGateway } from './gateway-control.js';
import { ensureWebUiSettings } from './webui-settings.js';

export interface WebUiFlags {
  /** false with --no-open. */
  open?: boolean;
  /** false with --no-start. */
  start?: boolean;
  /** `-p`: the WebUI's port, saved as channels.websocket.port. */
  port?: string;
  /** The health port of the gateway it starts. */
  gatewayPort?: string;
  /** `-y`: save what the WebUI needs in the config without asking. */
  yes?: boolean;
}

export interface WebUiIo {
  out(text: string): void;
  env: NodeJS.ProcessEnv;
  /** Opens a URL in the browser; rejects when it cannot. */
  openUrl(url: string): Promise<void>;
}

const defaultIo: WebUiIo = { out: (text) => process.stdout.write(text), env: process.env, openUrl: openInBrowser };
const START_WAIT_MS = 20_000;

export async function runWebUi(opts: GlobalOptions & WebUiFlags, io: WebUiIo = defaultIo): Promise<void> {
  let { loaded } = await setup(opts, io.env);
  if (await ensureWebUiSettings(loaded, opts, io)) ({ loaded } = await setup(opts, io.env));
  const block = loaded.config.channels.websocket;
  const settings = parseWebSocketSettings(block);
  if (!settings.webui) throw new UserError('The WebUI is off: channels.websocket.webui is false.');
  // The same token the gateway uses: the configured one, or the one in <data dir>/webui-token (made now if new).
  const token = settings.websocketRequiresToken ? await resolveToken(settings.token, loaded.dataDir) : undefined;
  const base = `http://${hostForUrl(settings.host)}:${settings.port}/`;
  const link = token ? `${base}#token=${encodeURIComponent(token)}` : base;

  if (!(await webUiAnswers(base))) {
    const state = readState(loaded.dataDir);
    const gatewayRunning = state !== undefined && isProcessAlive(state.pid);
    if (gatewayRunning) {
      throw new UserError(
        `The gateway is running (pid ${state.pid}) but the WebUI does not answer at ${base}.`,
        'See `nanobot gateway logs` for the websocket channel; after changing channels.websocket, restart the gateway (`nanobot gateway restart` when it runs in the background).',
      );
    }
    if (opts.start === false) {
      io.out(`The gateway is not running. Start it with \`nanobot gateway\`, then open:\n  ${link}\n`);
      return;
    }
    io.out('Starting the gateway in the background…\n');
    spawnBackgroundGateway(
      { ...opts, ...(opts.gatewayPort === undefined ? {} : { port: opts.gatewayPort }) },
      loaded.dataDir,
      io.env,
    );
    if (!(await waitForWebUi(base, START_WAIT_MS))) {
      throw new UserError(
        `The gateway did not bring the WebUI up at ${base} within ${START_WAIT_MS / 1000} s.`,
        `See \`nanobot gateway logs\` (${logFilePath(loaded.dataDir)}).`,
      );
    }
    io.out('Gateway started (stop it with `nanobot gateway stop`).\n');
  }

  if (token && !(await tokenAccepted(base, token))) {
    throw new UserError(
      `The running gateway does not accept your WebUI token (channels.websocket.token or ${tokenFilePath(loaded.dataDir)} changed after it started).`,
      'Restart the gateway: `nanobot gateway stop`, then `nanobot webui`.',
    );
  }

  if (opts.open === false) {
    io.out(`WebUI: ${link}\n${token ? 'The link carries your token: keep it to yourself.\n' : ''}`);
    return;
  }
  try {
    await io.openUrl(link);
    io.out(`Opened the WebUI at ${base} in your browser.\n`);
  } catch {
    io.out(`Could not open a browser here. Open this link:\n  ${link}\n`);
  }
}

async function tokenAccepted(base: string, token: string): Promise<boolean> {
  try {
    const res = await fetch(new URL('api/info', base), {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(1_500),
    });
    return res.status === 200;
  } catch {
    return false;
  }
}

/** True when the WebSocket channel's server answers (401 without the token, 200 when none is needed). */
async function webUiAnswers(base: string): Promise<boolean> {
  try {
    const res = await fetch(new URL('api/info', base), { signal: AbortSignal.timeout(1_500) });
    return res.status === 401 || res.status === 200;
  } catch {
    return false;
  }
}

async function waitForWebUi(base: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await webUiAnswers(base)) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

function openInBrowser(url: string): Promise<void> {
  const [command, ...args] =
    process.platform === 'darwin'
      ? ['open', url]
      : process.platform === 'win32'
        ? ['cmd', '/c', 'start', '""', url.replace(/&/g, '^&')]
        : ['xdg-open', url];
  // The opener hands the URL to the browser and exits; a failure (no display, no browser) exits non-zero.
  return new Promise((resolve, reject) => {
    const child = spawn(command ?? 'xdg-open', args, { stdio: 'ignore', detached: true });
    const timer = setTimeout(() => {
      child.unref();
      resolve();
    }, 3_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`${command} exited with ${code}`));
    });
  });
}
