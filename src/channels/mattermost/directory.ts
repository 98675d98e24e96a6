/**
 * Who and where, looked up through Client4 and cached: a user's username (for `@name` entries in allowFrom) and
 * name, and a channel's type and team (for teamId, and for posts fetched while catching up).
 */
import type { Client4 } from '@mattermost/client';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { REQUEST_TIMEOUT_MS, withTimeout } from './rest.js';

const USER_CACHE_MS = 60 * 60_000;

export interface ChannelInfo {
  /** O (public), P (private), D (direct), G (group message). */
  type: string;
  teamId: string;
}

export interface UserInfo {
  username?: string;
  name?: string;
}

export class Directory {
  private readonly users = new Map<string, UserInfo & { until: number }>();
  private readonly channels = new Map<string, ChannelInfo>();
  private warned = false;

  /** Unknown (empty) when the lookup fails: allowFrom then matches the user's id only. */
  async user(client: Client4, userId: string, log: Logger): Promise<UserInfo> {
    const cached = this.users.get(userId);
    if (cached && cached.until > Date.now()) return withoutUntil(cached);
    try {
      const user = await withTimeout(client.getUser(userId), REQUEST_TIMEOUT_MS, 'a user');
      const name = [user.first_name, user.last_name].filter(Boolean).join(' ') || user.nickname || undefined;
      const info = { ...(user.username ? { username: user.username } : {}), ...(name ? { name } : {}) };
      this.users.set(userId, { ...info, until: Date.now() + USER_CACHE_MS });
      return info;
    } catch (err) {
      if (!this.warned) {
        this.warned = true;
        log.warn(
          `cannot look up Mattermost users (${errorMessage(err)}); allowFrom entries must be user ids until it works`,
        );
      }
      return {};
    }
  }

  async channel(client: Client4, channelId: string): Promise<ChannelInfo> {
    const known = this.channels.get(channelId);
    if (known) return known;
    const channel = await withTimeout(client.getChannel(channelId), REQUEST_TIMEOUT_MS, 'a channel');
    return this.remember(channelId, channel);
  }

  remember(channelId: string, channel: { type: string; team_id?: string }): ChannelInfo {
    const info = { type: channel.type, teamId: channel.team_id ?? '' };
    this.channels.set(channelId, info);
    return info;
  }
}

function withoutUntil({ until: _, ...info }: UserInfo & { until: number }): UserInfo {
  return info;
}
