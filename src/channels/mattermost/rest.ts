/**
 * Small pieces around Client4: what a Mattermost error means for the user, file downloads with the token (sent to
 * the configured server only), uploads, attachment kinds, and a timeout for calls the SDK cannot cancel.
 */
import { readFile, stat } from 'node:fs/promises';
import type { Client4 } from '@mattermost/client';
import { checkSecureUrl } from '../../security/hosts.js';
import { errorMessage, UserError } from '../../util/errors.js';
import type { AttachmentKind, IncomingAttachment } from '../platform.js';
import type { MattermostFileInfo } from './posts.js';

/** The server's default upload limit (FileSettings.MaxFileSize, 100 MB). */
export const MAX_UPLOAD_BYTES = 100 * 1024 * 1024;
export const REQUEST_TIMEOUT_MS = 60_000;

/** The HTTP status of a Client4 failure (ClientError carries the server's `status_code`). */
export function statusOf(err: unknown): number | undefined {
  const status = (err as { status_code?: unknown } | null)?.status_code;
  return typeof status === 'number' ? status : undefined;
}

/** A token the server refuses is a setup mistake (not retried); anything else is a connection problem (retried). */
export function describeConnectError(err: unknown, root: string): Error {
  const status = statusOf(err);
  if (status === 401) {
    return new UserError(
      'Mattermost rejected channels.mattermost.token (401 Unauthorized).',
      'Copy the bot account’s access token again (Integrations → Bot Accounts); a revoked token needs a new one.',
    );
  }
  if (status === 403) {
    return new UserError(
      'Mattermost refused the bot account (403 Forbidden): it may be disabled, or bot accounts are switched off.',
      'System Console → Integrations → Bot Accounts: enable them, and check that the bot is active.',
    );
  }
  if (status === 404) {
    return new UserError(
      `${root} answered 404 for /api/v4/users/me: channels.mattermost.serverUrl is not a Mattermost server.`,
      'Use the address you open Mattermost at in a browser, without /api/v4.',
    );
  }
  if (status !== undefined) return new Error(`Mattermost answered HTTP ${status}: ${errorMessage(err)}`);
  return new Error(`cannot reach Mattermost at ${root}: ${errorMessage(err)}`);
}

/** An Error saying which call the server refused and what to do about it. */
export function describeSendError(what: string, chatId: string, err: unknown): Error {
  const status = statusOf(err);
  if (status === 403) return new Error(`Mattermost refused ${what} in ${chatId} (403): add the bot to that channel`);
  if (status === 404) return new Error(`Mattermost has no channel ${chatId} the bot can see (404)`);
  if (status === 413) return new Error(`Mattermost refused ${what} in ${chatId}: too large (413)`);
  return err instanceof Error ? err : new Error(errorMessage(err));
}

export function kindOf(mimeType: string | undefined): AttachmentKind {
  if (mimeType?.startsWith('image/')) return 'image';
  if (mimeType?.startsWith('audio/')) return 'audio';
  if (mimeType?.startsWith('video/')) return 'video';
  return 'file';
}

/** A file of a post, downloaded from the configured server (the only place the token goes). */
export function toAttachment(file: MattermostFileInfo, root: string, token: string): IncomingAttachment {
  const mimeType = file.mime_type?.split(';')[0]?.trim() || undefined;
  return {
    kind: kindOf(mimeType),
    ...(file.name ? { name: file.name } : {}),
    ...(mimeType ? { mimeType } : {}),
    ...(file.size !== undefined ? { size: file.size } : {}),
    open: (signal) => download(`${root}/api/v4/files/${encodeURIComponent(file.id)}`, token, signal),
  };
}

/**
 * The token goes to the configured server only: a redirect elsewhere (a storage bucket's signed URL) is followed
 * without it, and only to https (or this machine).
 */
async function download(url: string, token: string, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>> {
  const origin = new URL(url).origin;
  let at = url;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const sameServer = new URL(at).origin === origin;
    const headers: Record<string, string> = sameServer ? { Authorization: `Bearer ${token}` } : {};
    const response = await fetch(at, { headers, signal, redirect: 'manual' });
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel().catch(() => undefined);
      at = new URL(location, at).href;
      const checked = checkSecureUrl(at);
      if ('error' in checked) throw new Error(`refusing a file download redirect that ${checked.error}`);
      continue;
    }
    if (!response.ok || !response.body) throw new Error(`file download answered HTTP ${response.status}`);
    return response.body as unknown as AsyncIterable<Uint8Array>;
  }
  throw new Error(`the file download was redirected more than ${MAX_REDIRECTS} times`);
}

const MAX_REDIRECTS = 3;

/** Uploads a local file into a channel; resolves to the file id a post then carries. */
export async function uploadFile(client: Client4, channelId: string, path: string, name: string): Promise<string> {
  const { size } = await stat(path);
  if (size > MAX_UPLOAD_BYTES) {
    throw new Error(`${name} is ${(size / 1024 / 1024).toFixed(1)} MB; Mattermost accepts at most 100 MB by default`);
  }
  const form = new FormData();
  form.append('channel_id', channelId);
  form.append('files', new Blob([await readFile(path)]), name);
  const uploaded = await withTimeout(client.uploadFile(form), REQUEST_TIMEOUT_MS, 'the upload');
  const id = uploaded.file_infos?.[0]?.id;
  if (!id) throw new Error(`Mattermost stored no file for ${name}`);
  return id;
}

/**
 * Client4 takes no AbortSignal: a call that hangs is given up on (its request may still finish) so the channel's
 * queue moves on and the router can retry.
 */
export function withTimeout<T>(task: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} got no answer from Mattermost in ${ms / 1000} s`)), ms);
    timer.unref?.();
  });
  return Promise.race([task, timeout]).finally(() => clearTimeout(timer));
}

/**
 * @channel, @all and @here notify everyone in a channel; the model's text never does (a zero-width space after the
 * @ keeps the word readable and unlinked). Personal @mentions stay.
 */
export function withoutGroupPings(text: string): string {
  return text.replace(/(^|[^\w@])@(channel|all|here)\b/gi, '$1@\u200b$2');
}
