/**
 * Several Feishu / Lark bots in one gateway, in upstream's config shape: `channels.feishu` is either one bot (a plain
 * section, the `default` instance) or `{ ...shared keys, instances: [{ id, name, appId, appSecret, … }, …] }`, each
 * instance's own keys over the shared ones. The default instance runs as the channel `feishu`, the others as
 * `feishu.<id>` (their sessions, pairing, /health entries and cron targets carry that name). As upstream does, an
 * instance without an id is `default` when first and `assistant-<n>` otherwise, an invalid or repeated id is skipped,
 * and of two enabled instances using the same app (domain + App ID) only the first runs.
 */
import { type ChannelInstance, type ChannelInstances, DEFAULT_INSTANCE, INSTANCE_ID } from '../definition.js';

type Block = Record<string, unknown>;

const isObject = (value: unknown): value is Block =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The id an instance names (upstream reads `id`, then `instanceId`, then `instance_id`). */
function ownId(raw: Block): unknown {
  return raw.id ?? raw.instanceId ?? raw.instance_id;
}

/** upstream's app identity: `feishu:<appId>` or `lark:<appId>` (a URL domain counts as feishu, as there). */
export function appIdentity(appId: unknown, domain: unknown): string {
  const id = typeof appId === 'string' ? appId.trim() : '';
  if (!id) return '';
  return `${
    String(domain ?? '')
      .trim()
      .toLowerCase() === 'lark'
      ? 'lark'
      : 'feishu'
  }:${id}`;
}

function defaultName(id: string): string {
  return id === DEFAULT_INSTANCE ? 'nanobot' : `nanobot ${id}`;
}

function list(section: unknown): { instances: ChannelInstance[]; skipped: string[] } {
  const block = isObject(section) ? section : {};
  if (!Array.isArray(block.instances)) {
    return { instances: [{ id: DEFAULT_INSTANCE, block: withoutInstances(block) }], skipped: [] };
  }
  const shared = withoutInstances(block);
  const instances: ChannelInstance[] = [];
  const skipped: string[] = [];
  const seen = new Set<string>();
  const apps = new Map<string, string>();
  block.instances.forEach((raw: unknown, index) => {
    const at = `channels.feishu.instances.${index}`;
    if (!isObject(raw)) {
      skipped.push(`${at}: expected an object`);
      return;
    }
    const given = ownId(raw);
    const id = given === undefined ? (index === 0 ? DEFAULT_INSTANCE : `assistant-${index + 1}`) : given;
    if (typeof id !== 'string' || !INSTANCE_ID.test(id.trim())) {
      skipped.push(`${at}: the id must be 1 to 64 of A-Z a-z 0-9 _ - (got ${JSON.stringify(id).slice(0, 80)})`);
      return;
    }
    const trimmed = id.trim();
    if (seen.has(trimmed)) {
      skipped.push(`${at}: the id "${trimmed}" is used twice`);
      return;
    }
    seen.add(trimmed);
    // Its id is its runtime name; the label is upstream's WebUI's. Neither is a setting: kept out, a file that only
    // changes shape (a plain section becoming `instances`) changes no instance's settings and restarts no bot.
    const { id: _id, instanceId: _instanceId, instance_id: _snake, name: _name, ...own } = raw;
    const merged: Block = { ...shared, ...own };
    if (merged.enabled === true) {
      const app = appIdentity(merged.appId ?? merged.app_id, merged.domain);
      const owner = app ? apps.get(app) : undefined;
      if (owner !== undefined) {
        skipped.push(`${at}: instance "${trimmed}" uses the same app as instance "${owner}"`);
        return;
      }
      if (app) apps.set(app, trimmed);
    }
    instances.push({ id: trimmed, block: merged });
  });
  return { instances, skipped };
}

function block(section: unknown, id: string): Block {
  const found = list(section).instances.find((instance) => instance.id === id);
  if (found) return found.block;
  return isObject(section) && Array.isArray(section.instances) ? withoutInstances(section) : {};
}

function withoutInstances(block: Block): Block {
  const { instances: _instances, ...rest } = block;
  return rest;
}

/**
 * Where instance `id`'s own keys live in the raw section: the section itself for the default instance of a plain
 * section (its shape is kept); otherwise its entry in `instances`, which is created (a plain section becomes the
 * `default` entry first, as upstream rewrites it).
 */
function blockIn(section: Block, id: string): Block {
  if (!INSTANCE_ID.test(id)) throw new Error(`invalid Feishu instance id ${JSON.stringify(id).slice(0, 80)}`);
  if (!Array.isArray(section.instances)) {
    if (id === DEFAULT_INSTANCE) return section;
    const own = { ...section };
    for (const key of Object.keys(section)) delete section[key];
    section.instances =
      Object.keys(own).length > 0 ? [{ ...own, id: DEFAULT_INSTANCE, instanceId: DEFAULT_INSTANCE }] : [];
  }
  const entries = section.instances as unknown[];
  const found = entries.find(
    (raw, index) =>
      isObject(raw) && String(ownId(raw) ?? (index === 0 ? DEFAULT_INSTANCE : `assistant-${index + 1}`)).trim() === id,
  );
  if (isObject(found)) return found;
  const created: Block = { id, instanceId: id, name: defaultName(id) };
  entries.push(created);
  return created;
}

export const feishuInstances: ChannelInstances = { list, block, blockIn };
