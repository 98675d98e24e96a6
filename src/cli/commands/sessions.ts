/**
 * `nanobot sessions list | restore-workspace`. `list` shows every stored conversation of the workspace: its key
 * (`channel:chat_id`, the two halves `cron add --channel/--chat-id` need), title, last update and size.
 * `restore-workspace` copies the sessions back into `<workspace>/sessions/` for a downgrade to nanobot v0.3.0, as
 * nanobot's own command does. Both first import v0.3.0's sessions, as every command that opens the sessions does.
 */
import { dirname } from 'node:path';
import { formatHistoryTimestamp } from '../../memory/history.js';
import { JsonlSessionStore } from '../../session/jsonl-store.js';
import { sessionsDirFor, withSessionsLock } from '../../session/location.js';
import { restoreSessionsToWorkspace } from '../../session/migrate.js';
import type { SessionSummary } from '../../session/types.js';
import { createLogger } from '../../util/log.js';
import type { GlobalOptions } from '../main.js';
import { setup } from '../setup.js';

export interface SessionsCliDeps {
  out?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}

const TITLE_MAX = 48;

export async function sessionsList(
  opts: GlobalOptions & { json?: boolean },
  deps: SessionsCliDeps = {},
): Promise<void> {
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const { loaded } = await setup(opts, deps.env);
  const log = createLogger(opts.verbose ? 'debug' : 'warn');
  const dir = await sessionsDirFor(loaded.dataDir, loaded.workspace, { log });
  const sessions = await new JsonlSessionStore(dir, log).list();
  if (opts.json) {
    out(
      JSON.stringify(
        sessions.map((s) => ({ ...s, ...splitKey(s.key) })),
        null,
        2,
      ),
    );
    return;
  }
  if (sessions.length === 0) {
    out(`No sessions yet for ${loaded.workspace}.`);
    return;
  }
  const timezone = loaded.config.agents.defaults.timezone;
  const rows = sessions.map((s) => [updated(s, timezone), String(s.messageCount), s.key, label(s)]);
  const header = ['UPDATED', 'MESSAGES', 'SESSION (channel:chat_id)', 'TITLE / FIRST MESSAGE'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  out(line(header));
  for (const row of rows) out(line(row));
  out('');
  out(`Times in ${timezone}. To deliver a cron job to a chat: nanobot cron add --channel CHANNEL --chat-id CHAT_ID …`);
}

export async function sessionsRestoreWorkspace(opts: GlobalOptions, deps: SessionsCliDeps = {}): Promise<void> {
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const { loaded } = await setup(opts, deps.env);
  const log = createLogger(opts.verbose ? 'debug' : 'warn');
  const dir = await sessionsDirFor(loaded.dataDir, loaded.workspace, { log });
  // Under the lock the import takes, so another nanobot starting now does not import these copies straight back.
  const result = await withSessionsLock(dirname(dir), log, async () =>
    restoreSessionsToWorkspace(loaded.workspace, dir),
  );
  out(`Restored ${result.restored} session file(s) to ${result.target}; ${result.unchanged} already matched.`);
  if (result.conflicts.length > 0) {
    out('Rollback is incomplete: these files already exist with other content, or cannot be read; review them:');
    for (const path of result.conflicts) out(`- ${path}`);
    process.exitCode = 1;
  }
}

/** A key names a chat when it is `channel:chat_id`; `-s old` or `heartbeat` name none. */
function splitKey(key: string): { channel?: string; chatId?: string } {
  const at = key.indexOf(':');
  return at <= 0 || at === key.length - 1 ? {} : { channel: key.slice(0, at), chatId: key.slice(at + 1) };
}

function label(session: SessionSummary): string {
  if (session.title) return clip(session.title);
  return session.preview ? `"${clip(session.preview)}"` : '';
}

/** nanobot writes local times without an offset, we write UTC ones; both parse, then show in the config's zone. */
function updated(session: SessionSummary, timezone: string): string {
  const at = Date.parse(session.updatedAt);
  return Number.isNaN(at) ? session.updatedAt : formatHistoryTimestamp(new Date(at), timezone);
}

function clip(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > TITLE_MAX ? `${flat.slice(0, TITLE_MAX - 1)}…` : flat;
}
