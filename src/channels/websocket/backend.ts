/**
 * What the WebUI's REST surface reads from the running gateway: the session store, whether a session is busy, the
 * model, the channels and the cron jobs. The gateway binds it once it runs (`bindWebUi`); tests build one directly.
 */
import { basename, join } from 'node:path';
import { listCronJobs } from '../../cron/service.js';
import type { CronJob, CronSchedule } from '../../cron/types.js';
import type { GatewayContext, GatewayService } from '../../gateway/lifecycle.js';
import type { McpManager } from '../../mcp/manager.js';
import { estimateTextTokens } from '../../memory/tokens.js';
import type { Session, SessionStore } from '../../session/types.js';
import { LocalTriggerStore } from '../../triggers/local-store.js';
import type { AutomationServices } from '../../webui/automations.js';
import { type ConfigAccess, configAccess } from '../../webui/config-access.js';
import type { ChannelHealth } from '../manager.js';
import { type PairingResult, PairingStore } from '../pairing.js';
import { approvedNotice } from '../pairing-command.js';
import type { CommandInfo } from './commands-api.js';
import type { StatusReport } from './frames.js';
import type { WorkspaceScope } from './sessions-api.js';

export interface WebUiBackend {
  sessions(): SessionStore;
  /** A turn of this session is running or queued (renaming or deleting it now would race with the save). */
  isBusy(sessionKey: string): boolean;
  model(): { model: string; provider: string; contextWindowTokens: number };
  /** The session's context use as `/status` counts it (system prompt, tools, live history). */
  contextTokens?(session: Session): number;
  channels(): Record<string, string>;
  cronJobs(): Promise<CronJob[]>;
  /** The gateway's workspace as nanobot's `workspace_scope` payload (a chat's own scope overrides it). */
  workspaceScope(): WorkspaceScope;
  /** The slash commands the agent runs (for `/api/commands`). */
  commands?(): CommandInfo[];
  /** When the running turn of this session started (epoch seconds), if one runs. */
  runStartedAt?(sessionKey: string): number | undefined;
  /** The live config, and changes to its file (the settings API, src/webui/). */
  config?(): ConfigAccess;
  // --- MCP (src/webui/mcp-presets.ts) ---
  /** The running agent's MCP servers (live state, tool names, retry); undefined when none are configured. */
  mcp?(): McpRuntime | undefined;
  // Settings › channels, pairing (src/webui/settings-features.ts, settings-pairing.ts):
  /** Each running channel's state and last error, as /health reports it. */
  channelHealth?(): Record<string, ChannelHealth>;
  /** The pairing store the channels check, and how an approved sender is told (as `/pairing approve` does). */
  pairing?(): PairingAccess;
  // ── automations (src/webui/automations.ts) ──
  /** The running cron service and the local-trigger store, which every automation change goes through. */
  automations?(): AutomationServices;
}

export interface PairingAccess {
  store: PairingStore;
  notifyApproved(approved: PairingResult): void;
}

/** What the WebUI's MCP settings read from the running agent's MCP servers. */
export type McpRuntime = Pick<McpManager, 'status' | 'toolNames' | 'retry'>;

/** Something with a name and a state, e.g. a Channel. */
export interface NamedStatus {
  readonly name: string;
  status(): string;
}

/** A backend over a running gateway: its live agent (a config reload swaps it) and its channels. */
export function gatewayBackend(context: GatewayContext, channels: () => readonly NamedStatus[]): WebUiBackend {
  const settingsConfig = configAccess(context.loaded, context.reload);
  // The same file the gateway's channels check (re-read by its stat), so an approval admits the next message.
  const pairing = new PairingStore({ dir: join(context.loaded().dataDir, 'pairing') });
  return {
    sessions: () => context.agent().sessions,
    isBusy: (key) => context.agent().loop.isActive(key),
    model: () => {
      const { model } = context.agent();
      return {
        model: model.model,
        provider: context.agent().provider.name,
        contextWindowTokens: model.contextWindowTokens,
      };
    },
    contextTokens: (session) => context.agent().loop.contextTokens(session),
    channels: () => Object.fromEntries(channels().map((channel) => [channel.name, channel.status()])),
    // Pending changes in action.jsonl (nanobot's `agent` writes there) are part of the list, as nanobot shows them.
    cronJobs: () => listCronJobs(context.loaded().workspace),
    commands: () =>
      context
        .agent()
        .loop.commands.list()
        .map(({ name, description, usage }) => ({ name, description, ...(usage ? { usage } : {}) })),
    config: () => settingsConfig,
    // --- MCP (src/webui/mcp-presets.ts) ---
    mcp: () => context.agent().mcp,
    channelHealth: () => context.channels(),
    pairing: () => ({
      store: pairing,
      notifyApproved: (approved) => {
        context.bus.publishOutbound({ channel: approved.channel, chatId: approved.chatId, content: approvedNotice });
      },
    }),
    // ── automations ──
    automations: () => ({
      ...(context.cron ? { cron: context.cron } : {}),
      triggers: new LocalTriggerStore(context.loaded().workspace),
      log: context.log,
    }),
    workspaceScope: () => {
      const { workspace, config } = context.loaded();
      return workspaceScopeOf(workspace, config.tools.restrictToWorkspace);
    },
  };
}

export function workspaceScopeOf(workspace: string, restrict: boolean): WorkspaceScope {
  return {
    project_path: workspace,
    project_name: basename(workspace) || workspace,
    access_mode: restrict ? 'restricted' : 'full',
    restrict_to_workspace: restrict,
  };
}

/** Anything that can serve the WebUI's REST routes once the gateway is up (the WebSocket channel). */
export interface WebUiHost {
  bindBackend(backend: WebUiBackend): void;
}

function isWebUiHost(value: unknown): value is WebUiHost {
  return typeof (value as Partial<WebUiHost> | null)?.bindBackend === 'function';
}

/**
 * A gateway service that hands the gateway's agent, sessions and cron jobs to the WebSocket channel(s) among
 * `channels`: pass it in `startGateway({ services })` next to the channels themselves.
 */
export function bindWebUi(channels: readonly NamedStatus[]): (context: GatewayContext) => GatewayService {
  return (context) => {
    const backend = gatewayBackend(context, () => channels);
    for (const channel of channels) if (isWebUiHost(channel)) channel.bindBackend(backend);
    return { name: 'webui', start() {}, stop: async () => {} };
  };
}

/** The status panel: the model, how full the session's context is (estimated), channels and cron jobs. */
export async function statusReport(backend: WebUiBackend, session: Session | undefined): Promise<StatusReport> {
  const { model, provider, contextWindowTokens } = backend.model();
  const jobs = await backend.cronJobs().catch(() => [] as CronJob[]);
  return {
    model,
    provider,
    context: session
      ? { used: backend.contextTokens?.(session) ?? historyTokens(session), window: contextWindowTokens }
      : null,
    channels: backend.channels(),
    cron: jobs.map((job) => ({
      id: job.id,
      name: job.name,
      enabled: job.enabled,
      schedule: describeSchedule(job.schedule),
      next_run_at: typeof job.state.nextRunAtMs === 'number' ? new Date(job.state.nextRunAtMs).toISOString() : null,
    })),
  };
}

/** The live history's size, for a backend that cannot build the system prompt (tests). */
function historyTokens(session: Session): number {
  return session.messages.slice(session.lastConsolidated).reduce((sum, message) => {
    const text = typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? '');
    const calls = message.tool_calls ? JSON.stringify(message.tool_calls) : '';
    return sum + estimateTextTokens(text + calls);
  }, 0);
}

function describeSchedule(schedule: CronSchedule): string {
  if (schedule.kind === 'cron') return `cron ${schedule.expr ?? ''}${schedule.tz ? ` (${schedule.tz})` : ''}`;
  if (schedule.kind === 'every') return `every ${Math.round((schedule.everyMs ?? 0) / 1000)} s`;
  return `at ${typeof schedule.atMs === 'number' ? new Date(schedule.atMs).toISOString() : '?'}`;
}
