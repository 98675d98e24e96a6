#!/usr/bin/env node
/**
 * Fails when a file in src/ imports node:fs (or node:fs/promises, fs, fs/promises) outside the workspace-file layer
 * and is not on the allowlist below. The sandboxed shell can plant links anywhere in the workspace, so every
 * host-side access to a workspace path must go through src/security/workspace-fs.ts; a file may touch fs directly
 * only for nanobot's own state outside the workspace, and says so here in one line. Type-only imports are fine.
 * A listed file that no longer imports fs is an error too, so the list stays honest.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

// `--root DIR` checks another tree (the check's own test uses it).
const rootAt = process.argv.indexOf('--root');
const ROOT = rootAt > 0 ? process.argv[rootAt + 1] : join(import.meta.dirname, '..');

/** The layer itself. */
const LAYER = new Set([
  'src/security/workspace-fs.ts',
  'src/security/workspace-resolve.ts',
  'src/security/workspace-file-ops.ts',
  'src/security/checked-open.ts',
  'src/security/checked-read.ts',
]);

/** File → why it may use fs directly. */
const ALLOWED = {
  'src/channels/chat-channel.ts': 'deletes a spoken reply it sent, written under ~/.nanobot/media/voice',
  'src/channels/websocket/transcribe.ts': 'a WebUI recording, in a temp file under ~/.nanobot/media (deleted after)',
  'src/providers/voice.ts': 'reads saved audio and writes converted/spoken audio under ~/.nanobot/media',
  'src/api/images.ts': 'saves uploaded images under ~/.nanobot/media (outside the workspace)',
  'src/channels/discord/platform.ts':
    'opens outbound media: copies the message tool made under ~/.nanobot/media after its check',
  'src/channels/email/guards.ts': 'email state file under ~/.nanobot',
  'src/channels/email/outbox.ts': 'email outbox under ~/.nanobot',
  'src/channels/feishu/platform.ts':
    'opens outbound media: copies the message tool made under ~/.nanobot/media after its check',
  'src/channels/matrix/media.ts':
    'opens outbound media: copies the message tool made under ~/.nanobot/media after its check',
  'src/channels/dingtalk/media.ts':
    'opens outbound media: copies the message tool made under ~/.nanobot/media after its check',
  'src/channels/matrix/crypto-store.ts': 'Matrix encryption key store under ~/.nanobot',
  'src/channels/matrix/session.ts': 'Matrix session file under ~/.nanobot',
  'src/channels/mattermost/rest.ts':
    'opens outbound media: copies the message tool made under ~/.nanobot/media after its check',
  'src/channels/napcat/media.ts':
    'opens outbound media: copies the message tool made under ~/.nanobot/media after its check',
  'src/channels/qq/media.ts':
    'opens outbound media: copies the message tool made under ~/.nanobot/media after its check',
  'src/channels/wecom/media.ts':
    'opens outbound media: copies the message tool made under ~/.nanobot/media after its check',
  'src/channels/media.ts': 'downloads inbound media into ~/.nanobot/media',
  'src/channels/signal/files.ts':
    "reads inbound attachments from signal-cli's attachments dir (confined to it); outbound media copies under ~/.nanobot/media",
  'src/channels/mochat/cursors.ts': 'MoChat session cursors under ~/.nanobot/mochat',
  'src/channels/msteams/media.ts':
    'opens outbound media: copies the message tool made under ~/.nanobot/media after its check',
  'src/channels/msteams/references.ts': 'Teams conversation references under ~/.nanobot',
  'src/channels/pairing.ts': 'pairing state under ~/.nanobot',
  'src/channels/whatsapp/auth-store.ts': 'WhatsApp linked-device keys under ~/.nanobot/whatsapp-auth',
  'src/channels/whatsapp/seen.ts': 'WhatsApp answered-message ids under ~/.nanobot/whatsapp',
  'src/channels/slack/platform.ts':
    'opens outbound media: copies the message tool made under ~/.nanobot/media after its check',
  'src/channels/weixin/transfer.ts':
    'opens outbound media: copies the message tool made under ~/.nanobot/media after its check',
  'src/channels/weixin/state.ts': 'WeChat login state (account.json) under ~/.nanobot/weixin',
  'src/channels/websocket/http.ts': 'serves the WebUI build from the package directory',
  'src/channels/websocket/rest.ts': '/api/media streams a file it opened and checked inside ~/.nanobot/media',
  'src/channels/websocket/token.ts': 'WebSocket token file under ~/.nanobot',
  'src/channels/websocket/transcript.ts': "nanobot's WebUI transcripts under ~/.nanobot/webui",
  'src/channels/websocket/sidebar-state.ts': "nanobot's WebUI sidebar state under ~/.nanobot/webui",
  'src/cli/commands/doctor.ts': 'checks the config file and that the workspace root is writable (no path inside it)',
  'src/cli/commands/gateway.ts': 'gateway log and state files under ~/.nanobot',
  'src/cli/commands/gateway-control.ts': 'gateway log file under ~/.nanobot (background start)',
  'src/cli/commands/gateway-service.ts': 'systemd unit / launchd plist under ~/.config or ~/Library (install-service)',
  'src/cli/commands/status.ts': 'checks that the config file and workspace root exist',
  'src/cli/setup.ts': 'checks that the workspace root exists (templates are copied through the layer)',
  'src/config/load.ts': 'reads ~/.nanobot/config.json',
  'src/config/timezone.ts': "reads the system's zone (/etc/localtime, /etc/timezone) for timezoneMode auto",
  'src/config/onboard.ts':
    'writes ~/.nanobot/config.json and reads the package templates (workspace writes use the layer)',
  'src/cron/service.ts': 'fs.watch only (notifications); jobs.json is read and written through the layer',
  'src/gateway/config-watch.ts': 'watches ~/.nanobot/config.json',
  'src/gateway/log-file.ts': 'gateway log file under ~/.nanobot',
  'src/gateway/state-file.ts': 'gateway state file under ~/.nanobot',
  'src/providers/oauth/store.ts': 'OAuth tokens under ~/.nanobot',
  'src/util/on-demand.ts': 'installs on-demand packages under ~/.nanobot/packages (outside the workspace)',
  'src/sdk.ts': 'checks that the workspace root exists (templates are copied through the layer)',
  'src/security/private-dir.ts': 'makes ~/.nanobot 0700 (the data dir, not the workspace)',
  'src/security/sandbox-identity.ts':
    'lchown hands a root-owned workspace to the sandbox uid once, before any command runs as it (lstat, no link followed)',
  'src/security/sandbox.ts': 'probes bwrap and the host paths it binds (no workspace entries)',
  'src/security/workspace.ts':
    'PathPolicy (realpath pre-checks that only word errors) and withContainedDirectory (fd-anchored writes)',
  'src/session/delivery.ts': 'delivery records beside the sessions under ~/.nanobot/sessions',
  'src/session/jsonl-files.ts': 'sessions under ~/.nanobot/sessions',
  'src/session/jsonl-store.ts': 'sessions under ~/.nanobot/sessions',
  'src/session/migrate.ts':
    'copies sessions into ~/.nanobot/sessions; the workspace sessions/ folder is read, written and removed through the layer',
  'src/session/location.ts': 'session folders under ~/.nanobot/sessions (the workspace id file uses the layer)',
  'src/session/token-usage.ts': 'token usage per day under ~/.nanobot/webui',
  'src/skills/install-source.ts': 'reads the skill source being installed and its temporary download',
  'src/skills/install.ts': 'reads the skill source being installed (writes into the workspace use the layer)',
  'src/skills/requirements.ts': 'looks up required binaries on PATH',
  'src/tools/filesystem/contained-write.ts':
    'writes inside a withContainedDirectory anchor (fd-anchored, checked at write time)',
  'src/tools/exec-process.ts': 'finds /bin/bash',
  'src/tools/exec.ts': 'stats the policy-resolved working directory; the command itself runs sandboxed',
  'src/tools/filesystem/apply-patch.ts':
    'stat/lstat only word plan errors (reads go through readContained); the rollback removes the new file inside a ' +
    'withContainedDirectory anchor and created directories with checked-open removeCheckedEmptyDir',
  'src/tools/filesystem/list-dir.ts': 'reads directories through checked-open anchors; a stat words errors',
  'src/tools/filesystem/read-file.ts': 'reads the fd openCheckedFile opened; a stat words errors',
  'src/tools/filesystem/write-file.ts': 'a stat words the answer; the write goes through withContainedDirectory',
  'src/tools/message.ts': 'a stat words errors; copies and prunes media under ~/.nanobot/media (outside the workspace)',
  'src/tools/search/grep-scan.ts': 'reads fds opened through checked-read anchors',
  'src/tools/search/search-common.ts': 'a stat words errors; the walk opens through checked-read anchors',
  'src/tools/search/walk.ts': 'lists and opens entries through checked-read directory anchors, never by path',
  'src/triggers/queue.ts': 'fs.watch only (notifications, on the opened directory); entries go through the layer',
  'src/util/fs.ts': 'atomic writes for state outside the workspace (config, sessions, tokens)',
  'src/util/paths.ts': 'finds the package root and reads its package.json version',
  'src/util/process-owner.ts': 'reads /proc/<pid>/stat (process start times, against pid reuse)',
};

// A value import of fs: `import x from 'node:fs'` (over several lines too), `import('node:fs')`, `require('fs')`,
// `export … from 'fs/promises'`. `import type …` / `export type …` is not one.
const FS_SPECIFIER = /\b(from|import\s*\(|require\s*\()\s*['"](?:node:)?fs(?:\/promises)?['"]/g;

function importsFs(text) {
  for (const match of text.matchAll(FS_SPECIFIER)) {
    if (!match[1].startsWith('from')) return true;
    const before = text.slice(0, match.index);
    const start = Math.max(before.lastIndexOf('import'), before.lastIndexOf('export'));
    if (start === -1 || !/^(?:import|export)\s+type\b/.test(text.slice(start))) return true;
  }
  return false;
}

function* tsFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* tsFiles(path);
    else if (/\.(?:ts|tsx|mts|js|mjs)$/.test(entry.name)) yield path;
  }
}

const problems = [];
const seen = new Set();
for (const file of tsFiles(join(ROOT, 'src'))) {
  const rel = relative(ROOT, file).split(sep).join('/');
  if (!importsFs(readFileSync(file, 'utf8'))) continue;
  seen.add(rel);
  if (LAYER.has(rel)) continue;
  const reason = ALLOWED[rel];
  if (!reason?.trim()) {
    problems.push(
      `${rel} imports node:fs outside the workspace-file layer. Use src/security/workspace-fs.ts for any path under ` +
        'the workspace; if the file only touches nanobot state outside it, add it to ALLOWED in ' +
        'scripts/check-workspace-fs.mjs with a one-line reason.',
    );
  }
}
for (const rel of Object.keys(ALLOWED)) {
  if (!seen.has(rel))
    problems.push(`${rel} is on the allowlist but no longer imports node:fs: remove it from ALLOWED.`);
}
if (problems.length > 0) {
  for (const problem of problems) console.error(`check-workspace-fs: ${problem}`);
  process.exit(1);
}
console.log(`check-workspace-fs: ok (${seen.size} files import fs: ${LAYER.size} in the layer, the rest allowlisted)`);
