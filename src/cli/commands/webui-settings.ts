/**
 * `nanobot webui [-p PORT] [-y]`: what the WebUI needs in the config (the websocket channel on, and the port asked
 * for) is saved there, after a yes from the user (asked on a terminal, `--yes` elsewhere), as nanobot's CLI does.
 */
import { createInterface } from 'node:readline/promises';
import { parseWebSocketSettings } from '../../channels/websocket/index.js';
import type { LoadedConfig } from '../../config/load.js';
import { updateConfigFile } from '../../config/onboard.js';
import { UserError } from '../../util/errors.js';

export interface WebUiSettingFlags {
  port?: string;
  yes?: boolean;
}

export interface SettingsIo {
  out(text: string): void;
  /** Asks a yes/no question; undefined when nobody can answer (no terminal). */
  confirm?: (question: string) => Promise<boolean>;
}

/** Returns true when it changed the config file (the caller loads it again). */
export async function ensureWebUiSettings(
  loaded: LoadedConfig,
  flags: WebUiSettingFlags,
  io: SettingsIo,
  confirm: ((question: string) => Promise<boolean>) | undefined = io.confirm ?? terminalConfirm(),
): Promise<boolean> {
  const settings = parseWebSocketSettings(loaded.config.channels.websocket);
  const port = flags.port === undefined ? undefined : parsePort(flags.port);
  const changes: string[] = [];
  if (!settings.enabled) changes.push('channels.websocket.enabled = true');
  if (port !== undefined && port !== settings.port) changes.push(`channels.websocket.port = ${port}`);
  if (changes.length === 0) return false;
  const what = changes.join(', ');
  if (!flags.yes) {
    if (!confirm) {
      const why = settings.enabled
        ? `The WebUI needs ${what}`
        : 'The WebUI is off: channels.websocket.enabled is false';
      throw new UserError(
        `${why} (${loaded.configPath}).`,
        `Run again with --yes to save ${what} there, or edit the file yourself.`,
      );
    }
    if (!(await confirm(`Save ${what} in ${loaded.configPath}? [Y/n] `))) {
      throw new UserError('WebUI setup cancelled; nothing was changed.');
    }
  }
  await updateConfigFile(loaded.configPath, (raw) => {
    const channels = (raw.channels ?? {}) as Record<string, unknown>;
    const block: Record<string, unknown> = {
      ...((channels.websocket ?? {}) as Record<string, unknown>),
      enabled: true,
    };
    if (port !== undefined) block.port = port;
    channels.websocket = block;
    raw.channels = channels;
  });
  io.out(`Saved ${what} in ${loaded.configPath}\n`);
  return true;
}

function parsePort(text: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UserError(`--port expects 1–65535, got "${text}"`);
  return port;
}

function terminalConfirm(): ((question: string) => Promise<boolean>) | undefined {
  if (process.stdin.isTTY !== true) return undefined;
  return async (question) => {
    const rl = createInterface({ input: process.stdin, output: process.stdout });
    try {
      const answer = (await rl.question(question)).trim().toLowerCase();
      return answer === '' || answer === 'y' || answer === 'yes';
    } finally {
      rl.close();
    }
  };
}
