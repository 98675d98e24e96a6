/**
 * nanobot's WebUI sidebar state, `~/.nanobot/webui/sidebar-state.json` (nanobot/webui/sidebar_state.py): pinned and
 * archived chats, their order, title overrides (how the WebUI renames a chat), tags, collapsed groups, workbench
 * tabs, view options. UI-only: it never changes a session. Every write is normalised (unknown keys dropped, lists
 * and strings capped) and atomic; a missing, oversized or damaged file reads as the defaults.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../util/fs.js';

export const SIDEBAR_SCHEMA_VERSION = 1;
const MAX_FILE_BYTES = 256 * 1024;
const MAX_ITEMS = 2000;
const MAX_KEY = 512;
const MAX_TITLE = 160;
const MAX_TAG = 40;
const DENSITIES = new Set(['comfortable', 'compact']);
const SORTS = new Set(['updated_desc', 'created_desc', 'title_asc', 'manual']);

export type SidebarState = Record<string, unknown> & {
  schema_version: number;
  title_overrides: Record<string, string>;
  updated_at: string | null;
};

export class SidebarStateError extends Error {}

export function defaultSidebarState(): SidebarState {
  return {
    schema_version: SIDEBAR_SCHEMA_VERSION,
    pinned_keys: [],
    archived_keys: [],
    session_order: [],
    title_overrides: {},
    project_name_overrides: {},
    tags_by_key: {},
    collapsed_groups: {},
    workbench: { version: 1, tabs: {} },
    view: defaultView(),
    updated_at: null,
  };
}

function defaultView() {
  return {
    density: 'comfortable',
    show_previews: false,
    show_timestamps: false,
    show_archived: false,
    sort: 'updated_desc',
  };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function cleanString(value: unknown, max = MAX_KEY): string | undefined {
  if (typeof value !== 'string') return undefined;
  const s = value.trim();
  return s ? s.slice(0, max) : undefined;
}

function cleanList(value: unknown, max = MAX_KEY): string[] {
  if (!Array.isArray(value)) return [];
  const out = new Set<string>();
  for (const item of value.slice(0, MAX_ITEMS)) {
    const s = cleanString(item, max);
    if (s !== undefined) out.add(s);
  }
  return [...out];
}

function cleanTitles(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!isRecord(value)) return out;
  for (const [k, v] of Object.entries(value).slice(0, MAX_ITEMS)) {
    const key = cleanString(k);
    const title = cleanString(v, MAX_TITLE);
    if (key !== undefined && title !== undefined) out[key] = title;
  }
  return out;
}

function cleanTags(value: unknown): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (!isRecord(value)) return out;
  for (const [k, v] of Object.entries(value).slice(0, MAX_ITEMS)) {
    const key = cleanString(k);
    const tags = cleanList(v, MAX_TAG).slice(0, 12);
    if (key !== undefined && tags.length) out[key] = tags;
  }
  return out;
}

function cleanBools(value: unknown): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  if (!isRecord(value)) return out;
  for (const [k, v] of Object.entries(value).slice(0, MAX_ITEMS)) {
    const key = cleanString(k);
    if (key !== undefined) out[key] = Boolean(v);
  }
  return out;
}

function cleanView(value: unknown) {
  const view = defaultView();
  if (!isRecord(value)) return view;
  return {
    density: DENSITIES.has(String(value.density)) ? String(value.density) : view.density,
    show_previews: Boolean(value.show_previews ?? view.show_previews),
    show_timestamps: Boolean(value.show_timestamps ?? view.show_timestamps),
    show_archived: Boolean(value.show_archived ?? view.show_archived),
    sort: SORTS.has(String(value.sort)) ? String(value.sort) : view.sort,
  };
}

/** Workbench tabs (split panes of chats): kept when they have nanobot's version-1 shape, capped in size. */
function cleanWorkbench(value: unknown) {
  if (!isRecord(value) || value.version !== 1 || !isRecord(value.tabs)) return { version: 1, tabs: {} };
  const tabs: Record<string, unknown> = {};
  for (const [k, tab] of Object.entries(value.tabs).slice(0, MAX_ITEMS)) {
    const key = cleanString(k);
    if (key === undefined || !isRecord(tab)) continue;
    const paneKeys = cleanList(tab.paneKeys).slice(0, 4);
    if (paneKeys.length === 0) continue;
    tabs[key] = {
      explicit: tab.explicit === true,
      title: cleanString(tab.title, MAX_TITLE) ?? null,
      paneKeys,
      layoutPaneKeys: cleanList(tab.layoutPaneKeys).filter((p) => paneKeys.includes(p)),
      layout: ['columns', 'rows', 'grid', 'bsp', 'main-stack'].includes(String(tab.layout)) ? tab.layout : 'columns',
      splitRatios: Array.isArray(tab.splitRatios)
        ? tab.splitRatios
            .filter((r): r is number => typeof r === 'number' && Number.isFinite(r))
            .slice(0, 3)
            .map((r) => Math.round(Math.min(0.95, Math.max(0.05, r)) * 10_000) / 10_000)
        : [],
    };
  }
  return { version: 1, tabs };
}

export function normalizeSidebarState(raw: unknown): SidebarState {
  const r = isRecord(raw) ? raw : {};
  return {
    schema_version: SIDEBAR_SCHEMA_VERSION,
    pinned_keys: cleanList(r.pinned_keys),
    archived_keys: cleanList(r.archived_keys),
    session_order: cleanList(r.session_order),
    title_overrides: cleanTitles(r.title_overrides),
    project_name_overrides: cleanTitles(r.project_name_overrides),
    tags_by_key: cleanTags(r.tags_by_key),
    collapsed_groups: cleanBools(r.collapsed_groups),
    workbench: cleanWorkbench(r.workbench),
    view: cleanView(r.view),
    updated_at: typeof r.updated_at === 'string' ? r.updated_at : null,
  };
}

export class SidebarStateStore {
  /** Writes run one after another, so two tabs' updates cannot interleave. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    /** `~/.nanobot/webui`. */
    private readonly dir: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  get path(): string {
    return join(this.dir, 'sidebar-state.json');
  }

  async read(): Promise<SidebarState> {
    try {
      if ((await stat(this.path)).size > MAX_FILE_BYTES) return defaultSidebarState();
      return normalizeSidebarState(JSON.parse(await readFile(this.path, 'utf8')));
    } catch {
      return defaultSidebarState();
    }
  }

  /** Replaces the state with `raw`, normalised; returns what was stored. */
  write(raw: Record<string, unknown>): Promise<SidebarState> {
    const run = this.queue.then(async () => {
      const state = normalizeSidebarState(raw);
      state.updated_at = `${this.now().toISOString().slice(0, 19)}Z`;
      const text = `${JSON.stringify(sortKeys(state), null, 2)}\n`;
      if (Buffer.byteLength(text) > MAX_FILE_BYTES) throw new SidebarStateError('sidebar state is too large');
      await writeFileAtomic(this.path, text, 0o600);
      return state;
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isRecord(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortKeys(value[k])]),
  );
}
