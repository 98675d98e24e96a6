/**
 * Which access token the bot uses: `accessToken` from the config, or, when only `password` is set, a session from a
 * password login kept in `<dataDir>/matrix/session.json` (0600) and reused on the next start, so every restart does
 * not create another device on the account. A saved token the server no longer accepts is replaced by a new login.
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { MatrixClient } from 'matrix-js-sdk';
import { z } from 'zod';
import { errorMessage, UserError } from '../../util/errors.js';
import { writeFileAtomic } from '../../util/fs.js';
import { parseJsonAs } from '../../util/json.js';
import type { Logger } from '../../util/log.js';
import type { MatrixSettings } from './index.js';

type Sdk = typeof import('matrix-js-sdk');

export interface MatrixSession {
  accessToken: string;
  deviceId?: string;
  /** From session.json (a password login): may be discarded when the server rejects it. */
  saved: boolean;
}

interface SessionFile {
  homeserver: string;
  userId: string;
  accessToken: string;
  deviceId?: string;
}

export function sessionPath(dataDir: string): string {
  return join(dataDir, 'matrix', 'session.json');
}

export async function currentSession(
  sdk: Sdk,
  settings: MatrixSettings,
  baseUrl: string,
  dataDir: string,
  log: Logger,
): Promise<MatrixSession> {
  if (settings.accessToken.trim()) {
    return { accessToken: settings.accessToken.trim(), ...deviceOf(settings.deviceId), saved: false };
  }
  const saved = await readSession(dataDir, log);
  if (saved && saved.homeserver === baseUrl && saved.userId === settings.userId) {
    return { accessToken: saved.accessToken, ...deviceOf(saved.deviceId), saved: true };
  }
  return passwordLogin(sdk, settings, baseUrl, dataDir, log);
}

/** Forgets a saved session the server rejected, and logs in again with the password. */
export async function renewSession(
  sdk: Sdk,
  settings: MatrixSettings,
  baseUrl: string,
  dataDir: string,
  log: Logger,
): Promise<MatrixSession> {
  log.warn('the saved Matrix session was rejected; logging in again with the password');
  await rm(sessionPath(dataDir), { force: true });
  return passwordLogin(sdk, settings, baseUrl, dataDir, log);
}

async function passwordLogin(
  sdk: Sdk,
  settings: MatrixSettings,
  baseUrl: string,
  dataDir: string,
  log: Logger,
): Promise<MatrixSession> {
  const client: MatrixClient = sdk.createClient({ baseUrl });
  let response: Awaited<ReturnType<MatrixClient['loginRequest']>>;
  try {
    response = await client.loginRequest({
      type: 'm.login.password',
      identifier: { type: 'm.id.user', user: settings.userId },
      password: settings.password,
      ...(settings.deviceId ? { device_id: settings.deviceId } : {}),
      initial_device_display_name: 'nanobot',
    });
  } catch (err) {
    if (isMatrixError(err) && (err.errcode === 'M_FORBIDDEN' || err.errcode === 'M_USER_DEACTIVATED')) {
      throw new UserError(
        `The Matrix homeserver refused the login for ${settings.userId} (${err.errcode}).`,
        'Check channels.matrix.userId and channels.matrix.password, or set an accessToken instead.',
      );
    }
    throw new Error(`Matrix login failed: ${errorMessage(err)}`);
  }
  const session: SessionFile = {
    homeserver: baseUrl,
    userId: settings.userId,
    accessToken: response.access_token,
    ...deviceOf(response.device_id),
  };
  await writeFileAtomic(sessionPath(dataDir), `${JSON.stringify(session, null, 2)}\n`, 0o600);
  log.info(`logged in to Matrix as ${settings.userId} (device ${response.device_id}); session saved`);
  return { accessToken: session.accessToken, ...deviceOf(session.deviceId), saved: true };
}

const SavedSession = z.looseObject({
  homeserver: z.string().min(1),
  userId: z.string().min(1),
  accessToken: z.string().min(1),
  deviceId: z.string().optional().catch(undefined),
});

/** The saved session; a damaged file is logged (path, what is wrong) and replaced by a new password login. */
async function readSession(dataDir: string, log: Logger): Promise<SessionFile | undefined> {
  const path = sessionPath(dataDir);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      log.warn(`Matrix session file ${path} cannot be read: ${errorMessage(error)}; logging in with the password`);
    }
    return undefined;
  }
  const parsed = parseJsonAs(text, SavedSession, `Matrix session file ${path}`);
  if (!parsed.ok) {
    log.warn(`${parsed.problem}; logging in with the password again`);
    return undefined;
  }
  const { homeserver, userId, accessToken, deviceId } = parsed.value;
  return { homeserver, userId, accessToken, ...deviceOf(deviceId) };
}

function deviceOf(deviceId: string | undefined): { deviceId?: string } {
  return deviceId ? { deviceId } : {};
}

export function isMatrixError(err: unknown): err is { errcode: string; httpStatus?: number; message: string } {
  return typeof err === 'object' && err !== null && typeof (err as { errcode?: unknown }).errcode === 'string';
}

export function isTokenError(err: unknown): err is { errcode: string } {
  return isMatrixError(err) && (err.errcode === 'M_UNKNOWN_TOKEN' || err.errcode === 'M_MISSING_TOKEN');
}

/** A rejected token or deactivated account is a setup mistake (not retried); anything else is worth retrying. */
export function describeConnectError(err: unknown, baseUrl: string): Error {
  if (err instanceof UserError) return err;
  if (isTokenError(err)) {
    return new UserError(
      `The Matrix homeserver ${baseUrl} rejected the access token (${err.errcode}).`,
      'Set a current channels.matrix.accessToken for the bot account (or a password to log in with).',
    );
  }
  if (isMatrixError(err) && err.errcode === 'M_USER_DEACTIVATED') {
    return new UserError(`The bot's Matrix account on ${baseUrl} is deactivated.`);
  }
  return new Error(`cannot reach the Matrix homeserver ${baseUrl}: ${errorMessage(err)}`);
}

/** `nanobot channels login matrix`: checks the credentials (logging in with the password if that is what is set). */
export async function checkLogin(
  sdk: Sdk,
  settings: MatrixSettings,
  baseUrl: string,
  dataDir: string,
  context: { log: Logger; out: (text: string) => void },
): Promise<void> {
  const whoami = (session: MatrixSession) =>
    sdk.createClient({ baseUrl, accessToken: session.accessToken, userId: settings.userId }).whoami();
  try {
    let session = await currentSession(sdk, settings, baseUrl, dataDir, context.log);
    const identity = await whoami(session).catch(async (err: unknown) => {
      if (!session.saved || !isTokenError(err)) throw err;
      session = await renewSession(sdk, settings, baseUrl, dataDir, context.log);
      return whoami(session);
    });
    if (identity.user_id !== settings.userId) {
      throw new UserError(
        `The Matrix access token belongs to ${identity.user_id}, not to channels.matrix.userId (${settings.userId}).`,
      );
    }
    const device = identity.device_id ? `, device ${identity.device_id}` : '';
    const where = session.saved ? ` The session is saved in ${sessionPath(dataDir)}.` : '';
    context.out(`Matrix: signed in to ${baseUrl} as ${identity.user_id}${device}.${where}\n`);
  } catch (err) {
    throw describeConnectError(err, baseUrl);
  }
}
