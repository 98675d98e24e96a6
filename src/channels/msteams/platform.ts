/**
 * Microsoft Teams through Bot Framework: a messaging endpoint Bot Framework posts activities to (every one checked
 * by its signed token before anything else), and replies posted to the Bot Connector API at the serviceUrl that came
 * with a verified activity. 1:1 chats are direct chats; group chats and channels are groups (the bot answers when
 * @mentioned, as groupPolicy says), a channel's threads each with their own session and the reply in the thread
 * (`replyInThread`). Replies are HTML (Teams' "xml" text format), with "typing…" while the agent works; images go
 * both ways. Conversation references are kept on disk, so cron jobs and the message tool reach a chat after a
 * restart.
 *
 * Connection: there is no socket to lose. `connect` fetches Bot Framework's keys and the bot's token (so wrong
 * credentials stop the channel with a clear error) and starts the endpoint; a reply that meets an outage is retried
 * by the connector client while the endpoint keeps taking messages.
 */
import type * as Jose from 'jose';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { ChannelCapabilities } from '../channel.js';
import type {
  ChatPlatform,
  IncomingMessage,
  OutgoingFile,
  OutgoingPart,
  PlatformLink,
  ReplyTarget,
} from '../platform.js';
import {
  Activity,
  Envelope,
  isPersonal,
  mentionsBot,
  senderIdOf,
  splitConversationId,
  tenantOf,
  userText,
} from './activity.js';
import { AuthRefused, BotFrameworkAuth } from './auth.js';
import { ConnectorClient, type OutgoingActivity } from './connector.js';
import { type Endpoint, startEndpoint } from './endpoint.js';
import { DEFAULT_OPENID_METADATA_URL, type MsTeamsSettings, tokenUrlOf } from './index.js';
import { incomingAttachments, inlineImage } from './media.js';
import { type ConversationRef, ConversationRefs, referencesPath } from './references.js';
import { AppTokenSource } from './token.js';
import { isTrustedServiceUrl, originOf } from './trust.js';

export type JoseApi = Pick<typeof Jose, 'jwtVerify' | 'createLocalJWKSet' | 'decodeProtectedHeader'>;

const MEMBER_TTL_MS = 60 * 60_000;
const MEMBER_RETRY_MS = 5 * 60_000;
const MAX_MEMBERS = 5_000;
const WARN_INTERVAL_MS = 10_000;
const TENANT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface TeamsPlatformOptions {
  jose: JoseApi;
  settings: () => MsTeamsSettings;
  dataDir: string;
  log: Logger;
  fetch?: typeof fetch;
  now?: () => number;
}

interface Live {
  link: PlatformLink;
  endpoint: Endpoint;
  auth: BotFrameworkAuth;
  tokens: AppTokenSource;
  connector: ConnectorClient;
  /** Aborted by `disconnect`: sends still retrying give up. */
  abort: AbortController;
}

export class TeamsPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    // Teams takes 40 KB a message; parts stay at 4,000 characters so long answers read as several messages.
    maxMessageLength: 4000,
    markup: 'html',
    editMessages: false,
    media: true,
    threads: true,
    buttons: false,
  };
  private live?: Live;
  private generation = 0;
  private readonly refs: ConversationRefs;
  private readonly members = new Map<string, { upn?: string; until: number }>();
  private readonly queues = new Map<string, Promise<void>>();
  private readonly now: () => number;
  private lastWarning = { at: Number.NEGATIVE_INFINITY, suppressed: 0 };

  constructor(private readonly options: TeamsPlatformOptions) {
    this.now = options.now ?? Date.now;
    this.refs = new ConversationRefs(referencesPath(options.dataDir), () => options.settings(), options.log, this.now);
  }

  async connect(link: PlatformLink): Promise<void> {
    const generation = ++this.generation;
    const settings = this.options.settings();
    await this.refs.load();
    const fetcher = this.options.fetch ?? globalThis.fetch;
    if (settings.openIdMetadataUrl !== DEFAULT_OPENID_METADATA_URL || settings.tokenUrl) {
      link.log.warn(
        `Bot Framework endpoints overridden (keys: ${originOf(settings.openIdMetadataUrl)}, token: ${originOf(tokenUrlOf(settings))}): ` +
          'only for tests and sovereign clouds',
      );
    }
    const auth = new BotFrameworkAuth({
      jose: this.options.jose,
      appId: settings.appId,
      openIdMetadataUrl: settings.openIdMetadataUrl,
      fetch: fetcher,
      now: this.now,
    });
    const { issuer } = await auth.prime();
    const tokens = new AppTokenSource({
      tokenUrl: tokenUrlOf(settings),
      appId: settings.appId,
      appPassword: settings.appPassword,
      scope: `${issuer.replace(/\/+$/, '')}/.default`,
      fetch: fetcher,
      now: this.now,
    });
    await tokens.token();
    const connector = new ConnectorClient({
      tokens,
      trustedHosts: () => this.options.settings().trustedServiceUrlHosts,
      log: link.log,
      fetch: fetcher,
      now: this.now,
    });
    const abort = new AbortController();
    let live: Live | undefined;
    const endpoint = await startEndpoint({
      host: settings.host,
      port: settings.port,
      path: settings.path,
      handle: (body, authorization) => (live ? this.handle(live, body, authorization) : Promise.resolve(503)),
      refused: (reason) => this.warnLimited(link.log, reason),
      log: link.log,
    });
    if (generation !== this.generation) {
      await endpoint.close();
      throw new Error('msteams was disconnected while connecting');
    }
    live = { link, endpoint, auth, tokens, connector, abort };
    this.live = live;
    link.log.info(`messaging endpoint listening on http://${settings.host}:${endpoint.port}${settings.path}`);
  }

  async disconnect(): Promise<void> {
    this.generation += 1;
    const live = this.live;
    this.live = undefined;
    if (!live) return;
    live.abort.abort(new Error('msteams disconnected'));
    await live.endpoint.close();
    await this.refs.flush();
  }

  async sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    return this.post(target, { type: 'message', textFormat: 'xml', text: teamsHtml(part.text) });
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    await this.post(target, { type: 'message', attachments: [await inlineImage(file)] });
  }

  async sendTyping(target: ReplyTarget): Promise<void> {
    const live = this.live;
    const ref = this.refs.get(conversationOf(target));
    if (!live || !ref) return;
    await live.connector.send(ref, { type: 'typing' }, { retry: false, signal: live.abort.signal });
  }

  directChatWith(chatId: string): { id: string; username?: string } | undefined {
    const ref = this.refs.get(chatId);
    if (ref?.conversationType !== 'personal' || !ref.user) return undefined;
    return { id: ref.user.id, ...(ref.user.upn ? { username: ref.user.upn } : {}) };
  }

  private async post(target: ReplyTarget, activity: OutgoingActivity): Promise<string> {
    const live = this.live;
    if (!live) throw new Error('msteams is not connected');
    const conversationId = conversationOf(target);
    const ref = this.refs.get(conversationId);
    if (!ref) {
      throw new Error(
        `no Teams conversation ${JSON.stringify(conversationId)} is known: the bot can write only where someone ` +
          'wrote to it (and not after refTtlDays without messages)',
      );
    }
    const replyToId = target.replyTo ?? (this.options.settings().replyInThread ? ref.activityId : undefined);
    const id = await live.connector.send(ref, activity, {
      ...(replyToId ? { replyToId } : {}),
      retry: true,
      signal: live.abort.signal,
    });
    this.refs.touch(conversationId);
    return id || `sent-${this.now()}`;
  }

  /** One POST to the endpoint: the status to answer. Only a verified activity is looked at beyond its envelope. */
  private async handle(live: Live, body: unknown, authorization: string | undefined): Promise<number> {
    const envelope = Envelope.safeParse(body);
    if (!envelope.success) return 400;
    try {
      await live.auth.verify(authorization, envelope.data);
    } catch (err) {
      this.warnLimited(live.link.log, `refused an activity: ${errorMessage(err)}`);
      return err instanceof AuthRefused ? 401 : 503;
    }
    const activity = Activity.safeParse(body);
    if (!activity.success) {
      live.link.log.warn(`ignored a verified activity with an unexpected shape: ${activity.error.issues[0]?.message}`);
      return 400;
    }
    const key = activity.data.conversation.id;
    const previous = this.queues.get(key) ?? Promise.resolve();
    const next = previous
      .then(() => this.onActivity(live, activity.data))
      .catch((err: unknown) => live.link.log.warn(`handling an activity in ${key} failed: ${errorMessage(err)}`));
    this.queues.set(key, next);
    void next.then(() => {
      if (this.queues.get(key) === next) this.queues.delete(key);
    });
    return 200;
  }

  private async onActivity(live: Live, activity: Activity): Promise<void> {
    if (activity.type !== 'message' || activity.from.id === activity.recipient.id) return;
    const settings = this.options.settings();
    if (!isTrustedServiceUrl(activity.serviceUrl, settings.trustedServiceUrlHosts)) {
      live.link.log.warn(
        `ignored an activity from ${originOf(activity.serviceUrl)}: not in channels.msteams.trustedServiceUrlHosts`,
      );
      return;
    }
    const tenant = tenantOf(activity);
    if (TENANT_ID.test(settings.tenantId) && tenant && tenant.toLowerCase() !== settings.tenantId.toLowerCase()) {
      live.link.log.warn(`ignored an activity from tenant ${tenant}: the bot serves tenant ${settings.tenantId}`);
      return;
    }
    const personal = isPersonal(activity);
    const channel = activity.conversation.conversationType === 'channel';
    const { base, thread } = channel
      ? splitConversationId(activity.conversation.id)
      : { base: activity.conversation.id };
    const senderId = senderIdOf(activity);
    const upn = await this.upnOf(live, activity, base);
    this.remember(activity, activity.conversation.id, personal ? { id: senderId, upn } : undefined);
    // The channel itself (not just this thread): where a cron job or the message tool can start a new post.
    if (channel && thread) this.remember(activity, base);
    const attachments = incomingAttachments(activity.attachments ?? [], {
      trustedHosts: settings.trustedServiceUrlHosts,
      token: () => live.tokens.token(),
      ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
    });
    let text = userText(activity);
    if (!text && attachments.length === 0) text = settings.mentionOnlyResponse.trim();
    if (!text && attachments.length === 0) return;
    const incoming: IncomingMessage = {
      id: activity.id ?? `${activity.conversation.id}:${this.now()}`,
      chatId: base,
      sender: {
        id: senderId,
        ...(upn ? { username: upn } : {}),
        ...(activity.from.name ? { name: activity.from.name } : {}),
      },
      chatType: personal ? 'direct' : 'group',
      text,
      mentioned: personal || mentionsBot(activity),
      ...(thread && settings.replyInThread ? { threadId: thread } : {}),
      ...(thread ? { sessionKey: `msteams:${activity.conversation.id}` } : {}),
      attachments,
      metadata: {
        msteams: {
          activity_id: activity.id,
          conversation_id: activity.conversation.id,
          conversation_type: activity.conversation.conversationType ?? 'personal',
          from_name: activity.from.name,
          ...(tenant ? { tenant_id: tenant } : {}),
        },
      },
    };
    await live.link.receive(incoming);
  }

  /** The reference a verified activity gives for `conversationId` (its own, or its channel's). */
  private remember(activity: Activity, conversationId: string, user?: { id: string; upn?: string }): void {
    const tenant = tenantOf(activity);
    const own = conversationId === activity.conversation.id;
    const name = activity.from.name;
    const ref: ConversationRef = {
      serviceUrl: activity.serviceUrl,
      conversationId,
      conversationType: activity.conversation.conversationType ?? 'personal',
      channelId: activity.channelId,
      botId: activity.recipient.id,
      ...(tenant ? { tenantId: tenant } : {}),
      ...(own && activity.id ? { activityId: activity.id } : {}),
      ...(user ? { user: { id: user.id, ...(name ? { name } : {}), ...(user.upn ? { upn: user.upn } : {}) } } : {}),
      updatedAt: this.now(),
    };
    this.refs.remember(ref);
  }

  /**
   * The sender's sign-in name (user principal name) from the conversation's member list, for `@name` entries in
   * allowFrom; cached an hour per sender. Without it the sender is matched by id only.
   */
  private async upnOf(live: Live, activity: Activity, conversationId: string): Promise<string | undefined> {
    const key = `${activity.serviceUrl}|${activity.from.id}`;
    const cached = this.members.get(key);
    if (cached && cached.until > this.now()) return cached.upn;
    let upn: string | undefined;
    let ttl = MEMBER_TTL_MS;
    try {
      const member = await live.connector.member(
        { serviceUrl: activity.serviceUrl, conversationId },
        activity.from.id,
        live.abort.signal,
      );
      upn = member?.userPrincipalName ?? member?.email;
    } catch (err) {
      // Teams is unreachable: the name known before (this run, or saved with the 1:1 chat) still names them.
      ttl = MEMBER_RETRY_MS;
      const saved = this.refs.get(activity.conversation.id)?.user;
      upn = cached?.upn ?? (saved?.id === senderIdOf(activity) ? saved.upn : undefined);
      live.link.log.debug(`could not look up ${activity.from.id}: ${errorMessage(err)}`);
    }
    this.members.delete(key);
    this.members.set(key, { ...(upn ? { upn } : {}), until: this.now() + ttl });
    while (this.members.size > MAX_MEMBERS) this.members.delete(this.members.keys().next().value ?? '');
    return upn;
  }

  /** Refusals can come in floods (anyone can post to the endpoint): one line per 10 s, with a count. */
  private warnLimited(log: Logger, message: string): void {
    if (this.now() - this.lastWarning.at < WARN_INTERVAL_MS) {
      this.lastWarning.suppressed += 1;
      return;
    }
    const more = this.lastWarning.suppressed;
    this.lastWarning = { at: this.now(), suppressed: 0 };
    log.warn(more > 0 ? `${message} (and ${more} more refused since the last report)` : message);
  }
}

/** The conversation a reply goes to: a channel thread is the channel's id with `;messageid=<root>`. */
function conversationOf(target: ReplyTarget): string {
  return target.threadId ? `${target.chatId};messageid=${target.threadId}` : target.chatId;
}

/**
 * The framework's HTML as Teams shows it in a text message: headings as bold paragraphs (Teams has none outside
 * cards), `<strike>` for struck text, a drawn line for a rule, no class attributes, and no line breaks between
 * blocks (outside `<pre>` a raw newline is not markup).
 */
export function teamsHtml(html: string): string {
  return html
    .replace(/(<\/(?:p|pre|ul|ol|blockquote|h[1-6])>|<hr>)\n+/g, '$1')
    .replace(/<h[1-6]>/g, '<p><strong>')
    .replace(/<\/h[1-6]>/g, '</strong></p>')
    .replace(/<(\/?)del>/g, '<$1strike>')
    .replace(/<hr>/g, '<p>──────────</p>')
    .replace(/<code class="language-[\w+#.-]+">/g, '<code>');
}
