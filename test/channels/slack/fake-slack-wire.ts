/** The fake Slack's wire formats: request bodies as @slack/web-api sends them, and Socket Mode payloads. */
import type http from 'node:http';

export const BOT = { userId: 'UBOT', botId: 'BBOT', teamId: 'T1', name: 'nanobot' };

export interface BotPost {
  ts: string;
  channel: string;
  /** mrkdwn as sent. */
  text: string;
  threadTs?: string;
  edits: number;
  blocks?: unknown[];
  files?: { id: string; name: string; size: number; content: Buffer }[];
}

export interface ApiCall {
  method: string;
  params: Record<string, unknown>;
}

export interface UserFile {
  name: string;
  mimetype: string;
  content: Buffer;
}

export interface UserMessage {
  channel: string;
  user: string;
  text?: string;
  /** Defaults to a fresh timestamp; the same ts twice is a redelivery. */
  ts?: string;
  threadTs?: string;
  channelType?: 'im' | 'channel' | 'group' | 'mpim';
  files?: UserFile[];
  /** Also deliver the `app_mention` event Slack sends when the text mentions the bot. */
  appMention?: boolean;
  /** Only the `app_mention` event (an app subscribed to mentions only). */
  onlyAppMention?: boolean;
  subtype?: string;
}

export interface Envelope {
  envelope_id: string;
  type: string;
  retry_attempt: number;
  [key: string]: unknown;
}

/** An Events API `event_callback` body around one event. */
export function eventCallback(event: Record<string, unknown>, eventId: string): Record<string, unknown> {
  return {
    token: 'verification',
    team_id: BOT.teamId,
    api_app_id: 'A1',
    type: 'event_callback',
    event_id: eventId,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ team_id: BOT.teamId, user_id: BOT.userId, is_bot: true }],
    event,
  };
}

export function slashCommandPayload(input: {
  command: string;
  text: string;
  user: string;
  userName: string;
  channel: string;
  url: string;
  triggerId: string;
}): Record<string, unknown> {
  return {
    token: 'verification',
    team_id: BOT.teamId,
    channel_id: input.channel,
    user_id: input.user,
    user_name: input.userName,
    command: input.command,
    text: input.text,
    api_app_id: 'A1',
    response_url: `${input.url}/respond`,
    trigger_id: input.triggerId,
  };
}

export function blockActionsPayload(input: {
  user: string;
  username: string;
  channel: string;
  messageTs: string;
  threadTs?: string;
  value: string;
  actionId: string;
  actionTs: string;
  triggerId: string;
}): Record<string, unknown> {
  return {
    type: 'block_actions',
    team: { id: BOT.teamId },
    user: { id: input.user, username: input.username, team_id: BOT.teamId },
    api_app_id: 'A1',
    token: 'verification',
    trigger_id: input.triggerId,
    container: { type: 'message', message_ts: input.messageTs, channel_id: input.channel },
    channel: { id: input.channel, name: 'chat' },
    message: { type: 'message', ts: input.messageTs, ...(input.threadTs ? { thread_ts: input.threadTs } : {}) },
    actions: [
      {
        type: 'button',
        action_id: input.actionId,
        block_id: 'nanobot_buttons',
        value: input.value,
        text: { type: 'plain_text', text: input.value },
        action_ts: input.actionTs,
      },
    ],
  };
}

export function json(res: http.ServerResponse, body: unknown, status = 200): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Form (what @slack/web-api sends: nested values as JSON strings), JSON, or multipart fields. */
export function parseParams(body: Buffer, type: string): Record<string, unknown> {
  if (type.includes('application/json'))
    return body.length ? (JSON.parse(body.toString('utf8')) as Record<string, unknown>) : {};
  const params: Record<string, unknown> = Object.fromEntries(new URLSearchParams(body.toString('utf8')));
  for (const key of ['blocks', 'attachments']) {
    if (typeof params[key] === 'string') params[key] = JSON.parse(params[key] as string);
  }
  return params;
}

/** The content of the first file part of a multipart body. */
export function multipartFile(body: Buffer, type: string): Buffer | undefined {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(type);
  if (!type.startsWith('multipart/form-data') || !boundary) return undefined;
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const next = body.indexOf(delimiter, at + delimiter.length);
    if (next === -1) return undefined;
    const part = body.subarray(at + delimiter.length + 2, next - 2);
    const split = part.indexOf('\r\n\r\n');
    if (/filename=/.test(part.subarray(0, split).toString('utf8'))) return part.subarray(split + 4);
    at = next;
  }
  return undefined;
}
