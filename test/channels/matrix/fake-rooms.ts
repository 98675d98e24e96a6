/**
 * The fake homeserver's rooms: one ordered event log per room, every event at a global stream position, and the
 * bot's `/sync` view computed from a position (the `since` token), so a client that resumes from its token gets
 * exactly what it has not seen, and a client without one gets an initial sync (state plus recent history).
 */
import { randomUUID } from 'node:crypto';

export interface FakeEvent {
  event_id: string;
  type: string;
  sender: string;
  origin_server_ts: number;
  content: Record<string, unknown>;
  state_key?: string;
  /** Stream position: a sync `since` this position does not include the event again. */
  pos: number;
}

export interface RoomOptions {
  id?: string;
  /** Joined users besides the bot. */
  members?: string[];
  /** The bot's membership: joined (default), or invited by `inviter`. */
  bot?: 'join' | 'invite' | 'none';
  inviter?: string;
  isDirect?: boolean;
  encrypted?: boolean;
  name?: string;
}

/** What the bot's message shows now (edits applied). */
export interface BotMessage {
  eventId: string;
  content: Record<string, unknown>;
  edits: number;
}

type NewEvent = Omit<FakeEvent, 'pos' | 'event_id' | 'origin_server_ts'> & { event_id?: string };

const wire = ({ pos: _pos, ...event }: FakeEvent) => ({ ...event, unsigned: {} });
const stripped = ({ type, state_key, sender, content }: FakeEvent) => ({ type, state_key, sender, content });

export class RoomLog {
  private readonly rooms = new Map<string, FakeEvent[]>();
  private readonly accountData = new Map<string, { content: unknown; pos: number }>();
  private pos = 0;

  constructor(
    private readonly serverName: string,
    readonly botId: string,
    /** Called after every change (wakes long polls). */
    private readonly changed: () => void,
  ) {}

  has(roomId: string): boolean {
    return this.rooms.has(roomId);
  }

  *allEvents(): Iterable<FakeEvent> {
    for (const events of this.rooms.values()) yield* events;
  }

  events(roomId: string): FakeEvent[] {
    return this.rooms.get(roomId) ?? [];
  }

  append(roomId: string, event: NewEvent): FakeEvent {
    const events = this.rooms.get(roomId);
    if (!events) throw new Error(`no room ${roomId}`);
    const full: FakeEvent = {
      event_id: event.event_id ?? `$${randomUUID()}`,
      origin_server_ts: Date.now(),
      ...event,
      pos: ++this.pos,
    };
    events.push(full);
    this.changed();
    return full;
  }

  membershipEvent(roomId: string, userId: string): FakeEvent | undefined {
    return this.events(roomId).findLast((e) => e.type === 'm.room.member' && e.state_key === userId);
  }

  membership(roomId: string, userId: string): string | undefined {
    const state = this.membershipEvent(roomId, userId)?.content.membership;
    return typeof state === 'string' ? state : undefined;
  }

  member(roomId: string, userId: string, state: string, sender = userId, extra: Record<string, unknown> = {}): void {
    // Display names as a homeserver fills them in from profiles (the bot's is "Nano").
    const displayname = userId === this.botId ? 'Nano' : userId.slice(1, userId.indexOf(':'));
    const content = { membership: state, ...(state === 'join' ? { displayname } : {}), ...extra };
    this.append(roomId, { type: 'm.room.member', state_key: userId, sender, content });
  }

  createRoom(room: RoomOptions = {}): string {
    const id = room.id ?? `!${randomUUID().slice(0, 8)}:${this.serverName}`;
    const creator = room.inviter ?? room.members?.[0] ?? this.botId;
    this.rooms.set(id, []);
    const state = (type: string, content: Record<string, unknown>) =>
      this.append(id, { type, state_key: '', sender: creator, content });
    state('m.room.create', { creator, room_version: '10' });
    const members = new Set([creator, ...(room.members ?? [])]);
    members.delete(this.botId);
    for (const user of members) this.member(id, user, 'join');
    if (room.name) state('m.room.name', { name: room.name });
    if (room.encrypted) state('m.room.encryption', { algorithm: 'm.megolm.v1.aes-sha2' });
    const bot = room.bot ?? 'join';
    if (bot === 'join') this.member(id, this.botId, 'join');
    if (bot === 'invite') this.member(id, this.botId, 'invite', creator, room.isDirect ? { is_direct: true } : {});
    return id;
  }

  get position(): number {
    return this.pos;
  }

  /** Takes the next stream position for something outside the rooms (to-device messages, device list changes). */
  record(store: (pos: number) => void): void {
    store(++this.pos);
    this.changed();
  }

  setAccountData(type: string, content: unknown): void {
    this.accountData.set(type, { content, pos: ++this.pos });
    this.changed();
  }

  getAccountData(type: string): unknown {
    return this.accountData.get(type)?.content;
  }

  /** A user's (the bot's) view of everything after `since` (all of it, timelines cut to `limit`, when `since` is undefined). */
  syncBody(since: number | undefined, limit: number, viewer = this.botId) {
    const join: Record<string, unknown> = {};
    const invite: Record<string, unknown> = {};
    for (const [roomId, events] of this.rooms) {
      const mine = this.membershipEvent(roomId, viewer);
      if (!mine) continue;
      const isNew = since === undefined || mine.pos > since;
      if (mine.content.membership === 'invite' && isNew) {
        invite[roomId] = { invite_state: { events: stateOf(events).map(stripped) } };
      }
      if (mine.content.membership !== 'join') continue;
      if (!isNew) {
        const timeline = events.filter((e) => e.pos > since);
        if (timeline.length > 0) join[roomId] = { timeline: { events: timeline.map(wire), limited: false } };
        continue;
      }
      // A room the bot sees for the first time: its state up to the bot's join, then the newest events.
      const afterJoin = events.indexOf(mine) + 1;
      const start = Math.max(afterJoin, since === undefined ? events.length - limit : 0);
      join[roomId] = {
        state: { events: stateOf(events.slice(0, start)).map(wire) },
        timeline: { events: events.slice(start).map(wire), limited: start > afterJoin },
      };
    }
    const data = [...this.accountData].filter(
      ([, value]) => viewer === this.botId && (since === undefined || value.pos > since),
    );
    const body = {
      next_batch: `s${this.pos}`,
      rooms: { join, invite, leave: {} },
      account_data: { events: data.map(([type, value]) => ({ type, content: value.content })) },
    };
    const empty = Object.keys(join).length + Object.keys(invite).length + data.length === 0;
    return { body, empty };
  }

  /** The bot's messages in a room as a user sees them (edits applied), in order. */
  botMessages(roomId: string): BotMessage[] {
    const shown: BotMessage[] = [];
    for (const event of this.events(roomId)) {
      if (event.type !== 'm.room.message' || event.sender !== this.botId) continue;
      const relation = event.content['m.relates_to'] as { rel_type?: string; event_id?: string } | undefined;
      if (relation?.rel_type === 'm.replace') {
        const target = shown.find((m) => m.eventId === relation.event_id);
        if (target) {
          target.content = event.content['m.new_content'] as Record<string, unknown>;
          target.edits += 1;
        }
        continue;
      }
      shown.push({ eventId: event.event_id, content: event.content, edits: 0 });
    }
    return shown;
  }
}

/** Latest state per (type, state_key), in first-seen order. */
function stateOf(events: FakeEvent[]): FakeEvent[] {
  const latest = new Map<string, FakeEvent>();
  for (const event of events) {
    if (event.state_key !== undefined) latest.set(`${event.type}\0${event.state_key}`, event);
  }
  return [...latest.values()];
}
