/**
 * The fake homeserver's end-to-end encryption endpoints, as a real homeserver relays them (it never sees a key's
 * secret half or a message's text): device keys (/keys/upload, /keys/query), one-time and fallback keys
 * (/keys/claim), to-device messages (/sendToDevice, delivered in /sync and deleted once a later `since`
 * acknowledges them), device list changes and one-time key counts in /sync.
 */
import type { RoomLog } from './fake-rooms.js';

export interface Device {
  user: string;
  device: string;
}

interface ToDevice {
  pos: number;
  /** The stream position of the sync that carried it: a later `since` acknowledges it. */
  deliveredIn?: number;
  type: string;
  sender: string;
  content: unknown;
}

type Json = Record<string, unknown>;
const key = (d: Device) => `${d.user}|${d.device}`;

export class FakeKeys {
  private readonly deviceKeys = new Map<string, Map<string, Json>>();
  private readonly oneTimeKeys = new Map<string, Map<string, unknown>>();
  private readonly fallbackKeys = new Map<string, Map<string, unknown>>();
  private readonly inbox = new Map<string, ToDevice[]>();
  private readonly changes: { user: string; pos: number }[] = [];
  /** Users whose to-device messages wait (a room key that is late) until `release`. */
  private readonly held = new Set<string>();
  /** Every to-device message relayed: [sender device, recipient device, type]. */
  readonly relayed: { from: Device; to: Device; type: string }[] = [];

  constructor(private readonly rooms: RoomLog) {}

  /** Answers an E2E request from `who`, or returns undefined when `path` is not one. */
  handle(method: string, path: string, body: Json, who: Device): unknown {
    if (path === '/_matrix/client/v3/keys/upload' && method === 'POST') return this.upload(body, who);
    if (path === '/_matrix/client/v3/keys/query' && method === 'POST') return this.query(body);
    if (path === '/_matrix/client/v3/keys/claim' && method === 'POST') return this.claim(body);
    if (path === '/_matrix/client/v3/keys/changes') return { changed: [], left: [] };
    const send = /^\/_matrix\/client\/v3\/sendToDevice\/([^/]+)\/[^/]+$/.exec(path);
    if (send?.[1] && method === 'PUT') return this.sendToDevice(send[1], body, who);
    return undefined;
  }

  hold(user: string): void {
    this.held.add(user);
  }

  release(user: string): void {
    this.held.delete(user);
    this.rooms.record(() => undefined);
  }

  /**
   * What `who`'s /sync after `since` (answered at stream position `now`) carries besides rooms. To-device messages
   * come again until a later `since` acknowledges the sync that carried them, then they are deleted.
   */
  syncExtras(who: Device, since: number | undefined, now: number) {
    const kept = (this.inbox.get(key(who)) ?? []).filter(
      (m) => m.deliveredIn === undefined || since === undefined || m.deliveredIn > since,
    );
    this.inbox.set(key(who), kept);
    const inbox = this.held.has(who.user) ? [] : kept;
    for (const m of inbox) m.deliveredIn = now;
    const changed =
      since === undefined ? [] : [...new Set(this.changes.filter((c) => c.pos > since).map((c) => c.user))];
    const body = {
      to_device: { events: inbox.map(({ type, sender, content }) => ({ type, sender, content })) },
      device_lists: { changed, left: [] },
      device_one_time_keys_count: { signed_curve25519: this.oneTimeKeys.get(key(who))?.size ?? 0 },
      device_unused_fallback_key_types: this.fallbackKeys.get(key(who))?.size ? ['signed_curve25519'] : [],
    };
    return { body, empty: inbox.length === 0 && changed.length === 0 };
  }

  devicesOf(user: string): string[] {
    return [...(this.deviceKeys.get(user)?.keys() ?? [])];
  }

  private upload(body: Json, who: Device) {
    const device = body.device_keys as Json | undefined;
    if (device) {
      const devices = this.deviceKeys.get(who.user) ?? new Map<string, Json>();
      const known = devices.get(who.device);
      // A real homeserver refuses different identity keys for a device that already has some.
      if (known && JSON.stringify(known.keys) !== JSON.stringify(device.keys))
        return { status: 400, errcode: 'M_INVALID_PARAM', error: 'device keys already uploaded and differ' };
      devices.set(who.device, device);
      this.deviceKeys.set(who.user, devices);
      if (!known) this.rooms.record((pos) => this.changes.push({ user: who.user, pos }));
    }
    const store = (into: Map<string, Map<string, unknown>>, keys: unknown, replace: boolean) => {
      if (!keys || typeof keys !== 'object') return;
      const mine = replace ? new Map<string, unknown>() : (into.get(key(who)) ?? new Map<string, unknown>());
      for (const [id, value] of Object.entries(keys)) mine.set(id, value);
      into.set(key(who), mine);
    };
    store(this.oneTimeKeys, body.one_time_keys, false);
    store(this.fallbackKeys, body.fallback_keys, true);
    return { one_time_key_counts: { signed_curve25519: this.oneTimeKeys.get(key(who))?.size ?? 0 } };
  }

  private query(body: Json) {
    const wanted = (body.device_keys ?? {}) as Record<string, string[]>;
    const device_keys: Record<string, Json> = {};
    for (const [user, only] of Object.entries(wanted)) {
      const devices = this.deviceKeys.get(user);
      device_keys[user] = Object.fromEntries(
        [...(devices ?? [])].filter(([id]) => only.length === 0 || only.includes(id)),
      );
    }
    return { device_keys, failures: {}, master_keys: {}, self_signing_keys: {}, user_signing_keys: {} };
  }

  private claim(body: Json) {
    const wanted = (body.one_time_keys ?? {}) as Record<string, Record<string, string>>;
    const one_time_keys: Record<string, Record<string, Json>> = {};
    for (const [user, devices] of Object.entries(wanted)) {
      for (const device of Object.keys(devices)) {
        const id = key({ user, device });
        const pool = this.oneTimeKeys.get(id);
        let found = pool?.entries().next().value;
        if (found && pool) pool.delete(found[0]);
        found ??= this.fallbackKeys.get(id)?.entries().next().value;
        if (!found) continue;
        one_time_keys[user] = { ...one_time_keys[user], [device]: { [found[0]]: found[1] } };
      }
    }
    return { one_time_keys, failures: {} };
  }

  private sendToDevice(type: string, body: Json, who: Device) {
    const messages = (body.messages ?? {}) as Record<string, Record<string, unknown>>;
    for (const [user, devices] of Object.entries(messages)) {
      for (const [device, content] of Object.entries(devices)) {
        const targets = device === '*' ? this.devicesOf(user) : [device];
        for (const target of targets) {
          const to = { user, device: target };
          this.rooms.record((pos) => {
            const inbox = this.inbox.get(key(to)) ?? [];
            inbox.push({ pos, type, sender: who.user, content });
            this.inbox.set(key(to), inbox);
          });
          this.relayed.push({ from: who, to, type });
        }
      }
    }
    return {};
  }
}
