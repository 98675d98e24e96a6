/**
 * Small pieces around @slack/web-api: what a Slack error means for the user, Block Kit buttons, the SDK's logger
 * routed into ours, and private file downloads with the bot token (sent to Slack's own hosts only).
 */
import type { Logger as SlackLogger, LogLevel as SlackLogLevel } from '@slack/bolt';
import { errorMessage, UserError } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { SlackFile } from './events.js';

/** Quick retries only: the ChannelManager reconnects and the router retries sends with their own backoff. */
export const RETRY_CONFIG = { retries: 3, factor: 2, minTimeout: 500, maxTimeout: 5_000, randomize: true };
export const REQUEST_TIMEOUT_MS = 120_000;

/** Slack's `{ ok: false, error }` code of a Web API failure, if that is what it is. */
export function slackErrorCode(err: unknown): string | undefined {
  const data = (err as { data?: { error?: unknown } } | undefined)?.data;
  return typeof data?.error === 'string' ? data.error : undefined;
}

const HINTS: Record<string, string> = {
  not_in_channel: 'invite the app to the channel first (/invite @your-app)',
  channel_not_found: 'the app cannot see that conversation (invite it, or check the channel id)',
  missing_scope: 'add the missing scope under OAuth & Permissions and reinstall the app',
  is_archived: 'the channel is archived',
  msg_too_long: 'the message is over Slack’s limit',
};

/** An Error saying which call Slack refused and what to do about it. */
export function describeSlackError(method: string, err: unknown): Error {
  const code = slackErrorCode(err);
  if (!code) return err instanceof Error ? err : new Error(errorMessage(err));
  const needed = (err as { data?: { needed?: unknown } }).data?.needed;
  const hint = HINTS[code];
  const scope = code === 'missing_scope' && typeof needed === 'string' ? ` (${needed})` : '';
  return new Error(`Slack refused ${method}: ${code}${scope}${hint ? ` — ${hint}` : ''}`);
}

const TOKEN_ERRORS = new Set(['invalid_auth', 'not_authed', 'account_inactive', 'token_revoked', 'token_expired']);

/** A token Slack refuses is a setup mistake (not retried); anything else is a connection problem (retried). */
export function describeConnectError(err: unknown, key: 'botToken' | 'appToken'): Error {
  const code = slackErrorCode(err);
  if (code && TOKEN_ERRORS.has(code)) {
    return new UserError(
      `Slack rejected channels.slack.${key} (${code}).`,
      key === 'botToken'
        ? 'Copy the Bot User OAuth Token (xoxb-…) again from OAuth & Permissions; reinstall the app if it was revoked.'
        : 'Generate a new app-level token with connections:write under Basic Information → App-Level Tokens.',
    );
  }
  if (code === 'not_allowed_token_type') {
    return new UserError(
      `channels.slack.${key} is the wrong kind of token for ${key === 'appToken' ? 'Socket Mode' : 'the Web API'}.`,
      'botToken is the xoxb- Bot User OAuth Token; appToken is an xapp- app-level token with connections:write.',
    );
  }
  if (code) return new Error(`Slack refused to connect: ${code}`);
  // The Socket Mode client rejects with nothing when its WebSocket fails before Slack's hello.
  if (err === undefined || err === null) return new Error('cannot open the Slack Socket Mode WebSocket');
  return new Error(`cannot reach Slack: ${errorMessage(err)}`);
}

/** Section text in Block Kit is capped at 3,000 characters; longer parts become several sections. */
const SECTION_MAX = 3000;
export const BUTTON_ACTION_PREFIX = 'nanobot_button_';

/** The message as Block Kit: its text in sections, then the buttons (a press comes back with the label as value). */
export function buttonBlocks(text: string, buttons: string[][]): Record<string, unknown>[] {
  const sections: string[] = [];
  let rest = text;
  while (rest.length > SECTION_MAX) {
    const cut = rest.lastIndexOf('\n', SECTION_MAX);
    const at = cut > SECTION_MAX / 2 ? cut : SECTION_MAX;
    sections.push(rest.slice(0, at));
    rest = rest.slice(at).replace(/^\n/, '');
  }
  if (rest.trim()) sections.push(rest);
  const labels = buttons.flat().slice(0, 25);
  return [
    ...sections.map((part) => ({ type: 'section', text: { type: 'mrkdwn', text: part } })),
    {
      type: 'actions',
      block_id: 'nanobot_buttons',
      elements: labels.map((label, i) => ({
        type: 'button',
        action_id: `${BUTTON_ACTION_PREFIX}${i}`,
        text: { type: 'plain_text', text: label.slice(0, 75) || '…' },
        value: label.slice(0, 2000),
      })),
    },
  ];
}

/**
 * The SDK's log lines in ours at debug level, its own debug chatter (every frame and request) dropped: what matters
 * (a lost connection, a refused call) is reported by the channel itself, with what happens next.
 */
export function sdkLogger(log: Logger, levels: typeof SlackLogLevel): SlackLogger {
  const line = (parts: unknown[]) =>
    `slack sdk: ${parts.map((p) => (typeof p === 'string' ? p : errorMessage(p))).join(' ')}`;
  return {
    debug: () => undefined,
    info: (...parts: unknown[]) => log.debug(line(parts)),
    warn: (...parts: unknown[]) => log.debug(line(parts)),
    error: (...parts: unknown[]) => log.debug(line(parts)),
    setLevel: () => undefined,
    getLevel: () => levels.INFO,
    setName: () => undefined,
  };
}

/**
 * Downloads a shared file with the bot token. The token goes to Slack's hosts (or the configured API host) only;
 * Slack answers a token without files:read with its sign-in page, which is reported as such, not saved.
 */
export async function downloadPrivateFile(
  file: SlackFile,
  token: string,
  apiUrl: string,
  signal: AbortSignal,
): Promise<AsyncIterable<Uint8Array>> {
  const address = file.url_private_download ?? file.url_private;
  if (!address) throw new Error('Slack gave no download URL for this file');
  const url = new URL(address);
  const slackHost = url.protocol === 'https:' && (url.hostname === 'slack.com' || url.hostname.endsWith('.slack.com'));
  if (!slackHost && url.origin !== new URL(apiUrl).origin)
    throw new Error(`not sending the bot token to ${url.host} (not a Slack host)`);
  const response = await fetch(url, { headers: { Authorization: `Bearer ${token}` }, signal });
  if (!response.ok || !response.body) throw new Error(`file download answered HTTP ${response.status}`);
  if ((response.headers.get('content-type') ?? '').includes('text/html')) {
    await response.body.cancel().catch(() => undefined);
    throw new Error(
      'Slack sent its sign-in page instead of the file: give the app the files:read scope and reinstall it',
    );
  }
  return response.body as unknown as AsyncIterable<Uint8Array>;
}
