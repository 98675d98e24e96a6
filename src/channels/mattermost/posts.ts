/**
 * Mattermost posts as the channel reads them: the `posted` WebSocket event and REST post lists validated (zod, unknown
 * fields ignored), whether a post addresses the bot under the channel's (or the thread's) policy, the text without
 * the bot's @mention, where the reply goes (thread), and the thread so far as context lines.
 */
import { z } from 'zod';
import type { MattermostSettings } from './index.js';

const fileInfo = z.looseObject({
  id: z.string(),
  name: z.string().optional(),
  mime_type: z.string().optional(),
  size: z.number().optional(),
});

export const postSchema = z.looseObject({
  id: z.string(),
  create_at: z.number().default(0),
  delete_at: z.number().default(0),
  user_id: z.string().default(''),
  channel_id: z.string().default(''),
  root_id: z.string().default(''),
  message: z.string().default(''),
  type: z.string().default(''),
  file_ids: z.array(z.string()).nullish(),
  metadata: z.looseObject({ files: z.array(fileInfo).nullish() }).nullish(),
});

export type MattermostPost = z.infer<typeof postSchema>;
export type MattermostFileInfo = z.infer<typeof fileInfo>;

export const postListSchema = z.looseObject({
  order: z.array(z.string()).default([]),
  posts: z.record(z.string(), postSchema).default({}),
});

/** The `posted` event: the post is a JSON string inside `data`; `channel_type` is O, P, D (direct) or G (group DM). */
const postedEvent = z.looseObject({
  data: z.looseObject({
    post: z.string(),
    channel_type: z.string().default(''),
    mentions: z.string().optional(),
  }),
  broadcast: z.looseObject({ team_id: z.string().default('') }).prefault({}),
});

export interface PostedEvent {
  post: MattermostPost;
  channelType: string;
  teamId: string;
  /** User ids the server found mentioned in the post. */
  mentions: string[];
}

/** A `posted` event, or undefined when it is not one we can read. */
export function readPostedEvent(message: unknown): PostedEvent | undefined {
  const event = postedEvent.safeParse(message);
  if (!event.success) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(event.data.data.post);
  } catch {
    return undefined;
  }
  const post = postSchema.safeParse(raw);
  if (!post.success) return undefined;
  return {
    post: post.data,
    channelType: event.data.data.channel_type,
    teamId: event.data.broadcast.team_id,
    mentions: parseMentions(event.data.data.mentions),
  };
}

function parseMentions(raw: string | undefined): string[] {
  if (!raw) return [];
  try {
    const parsed = z.array(z.string()).safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

/** A post the agent should look at: from a person (not the bot, not a system message), not deleted. */
export function isUserPost(post: MattermostPost, botId: string): boolean {
  return (
    post.user_id !== '' &&
    post.user_id !== botId &&
    post.channel_id !== '' &&
    !post.type.startsWith('system_') &&
    post.delete_at === 0
  );
}

export interface Bot {
  id: string;
  username: string;
}

/** `@botname` as a word of its own (not `@botname2`, not an e-mail address). */
export function mentionsBot(text: string, bot: Bot, mentions: readonly string[] = []): boolean {
  if (mentions.includes(bot.id)) return true;
  if (!bot.username) return false;
  return new RegExp(`(?<![@\\w.-])@${escapeRegExp(bot.username)}(?![\\w-]|\\.\\w)`, 'i').test(text);
}

export function withoutBotMention(text: string, bot: Bot): string {
  if (!bot.username) return text.trim();
  return text
    .replace(new RegExp(`(?<![@\\w.-])@${escapeRegExp(bot.username)}(?![\\w-]|\\.\\w)[:,]?\\s*`, 'gi'), '')
    .replace(/ {2,}/g, ' ')
    .trim();
}

/**
 * Whether a channel post (not a direct message) is for the agent: `groupPolicyInThread` inside a thread,
 * `groupPolicy` elsewhere; `allowlist` means the channel is in groupAllowFrom.
 */
export function addressesAgent(settings: MattermostSettings, post: MattermostPost, mentioned: boolean): boolean {
  const policy = post.root_id ? settings.groupPolicyInThread : settings.groupPolicy;
  if (policy === 'open') return true;
  if (policy === 'allowlist') return settings.groupAllowFrom.includes(post.channel_id);
  return mentioned;
}

/**
 * The thread a post belongs to for the conversation (its session), and the thread replies go to. A channel post
 * opens a thread under itself when `replyInThread`; a direct message only continues a thread the user opened.
 */
export function threadOf(post: MattermostPost, direct: boolean, replyInThread: boolean): string | undefined {
  if (post.root_id) return post.root_id;
  return replyInThread && !direct ? post.id : undefined;
}

const CONTEXT_LINE_MAX = 500;

/** The thread's earlier posts (oldest first, the current one left out) as `- who: text` lines. */
export function threadContextLines(
  list: z.infer<typeof postListSchema>,
  bot: Bot,
  currentId: string,
  names: ReadonlyMap<string, string>,
): string[] {
  const posts = list.order.map((id) => list.posts[id]).filter((post): post is MattermostPost => post !== undefined);
  posts.sort((a, b) => a.create_at - b.create_at);
  const lines: string[] = [];
  for (const post of posts) {
    if (post.id === currentId || post.type.startsWith('system_')) continue;
    const text = post.message.trim();
    if (!text) continue;
    const who = post.user_id === bot.id ? 'you' : `@${names.get(post.user_id) ?? post.user_id}`;
    const shown = text.length > CONTEXT_LINE_MAX ? `${text.slice(0, CONTEXT_LINE_MAX)}…` : text;
    lines.push(`- ${who}: ${shown}`);
  }
  return lines;
}

/** The newest post seen per channel, for the most recently active channels: where catching up starts. */
export class ChannelCursors {
  private readonly cursors = new Map<string, { id: string; createAt: number }>();

  constructor(private readonly maxChannels = 500) {}

  saw(post: MattermostPost): void {
    const current = this.cursors.get(post.channel_id);
    const newest = current && current.createAt > post.create_at ? current : { id: post.id, createAt: post.create_at };
    this.cursors.delete(post.channel_id);
    this.cursors.set(post.channel_id, newest);
    if (this.cursors.size > this.maxChannels) {
      const oldest = this.cursors.keys().next().value;
      if (oldest !== undefined) this.cursors.delete(oldest);
    }
  }

  get(channelId: string): { id: string; createAt: number } | undefined {
    return this.cursors.get(channelId);
  }

  forget(channelId: string): void {
    this.cursors.delete(channelId);
  }

  channels(): string[] {
    return [...this.cursors.keys()];
  }
}

/** The posts of a list created after `after` (ms, server time), oldest first, the post `skipId` left out. */
export function postsAfter(list: z.infer<typeof postListSchema>, after: number, skipId?: string): MattermostPost[] {
  return Object.values(list.posts)
    .filter((post) => post.create_at >= after && post.id !== skipId)
    .sort((a, b) => a.create_at - b.create_at || a.id.localeCompare(b.id));
}

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
