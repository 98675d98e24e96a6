/**
 * The gateway's background services: cron, heartbeat, idle auto-compaction and scheduled Dream. Each talks to the
 * agent through the same loop a chat message uses, so turns of one session never interleave.
 */

import { isDeepStrictEqual } from 'node:util';
import { findLegalStart } from '../agent/governor-pairing.js';
import type { LoadedConfig } from '../config/load.js';
import { runAsCronJob } from '../cron/context.js';
import { UNBOUND_AGENT_JOB_REASON } from '../cron/format.js';
import type { CronService } from '../cron/service.js';
import { cronTurn, NOTHING_TO_REPORT } from '../cron/turn.js';
import { type CronJob, isProtectedJob, isReminder } from '../cron/types.js';
import { HEARTBEAT_SESSION, HeartbeatService, modelEvaluator } from '../heartbeat/service.js';
import { AutoCompact } from '../memory/autocompact.js';
import { LocalTriggerStore, type TriggerDelivery } from '../triggers/local-store.js';
import { TriggerWatcher } from '../triggers/queue.js';
import { type Logger, logFailure, silentLogger } from '../util/log.js';
import type { GatewayContext, GatewayService } from './lifecycle.js';

const CLI_CHANNEL = 'cli';
const SYSTEM_PREFIXES = ['heartbeat', 'cron:', 'dream:', 'trigger:', 'system:'];

/**
 * What a cron job does when it fires. Every user job is bound to a chat (nanobot's rule): a reminder (ours) is sent
 * there as-is; an agent job runs a turn in its session and the answer goes to its chat. A job bound to the
 * `nanobot agent` chat (`cli`) keeps the answer in that session: no channel of the gateway reaches a terminal.
 * System jobs (nanobot's dream and heartbeat) never get here: our own Dream and heartbeat services run those.
 */
export function cronRunner(context: GatewayContext) {
  return (job: CronJob) =>
    runAsCronJob(job, async () => {
      if (isProtectedJob(job)) return { status: 'error' as const, error: 'system jobs run in their own services' };
      const turn = cronTurn(job);
      if (!turn) return { status: 'error' as const, error: UNBOUND_AGENT_JOB_REASON };
      const origin = { channel: turn.channel, chatId: turn.chatId };
      const local = origin.channel === CLI_CHANNEL;
      if (isReminder(job)) {
        if (local)
          return { status: 'error' as const, error: 'a reminder for the `nanobot agent` chat has nowhere to go' };
        const down = undeliverable(context, origin.channel);
        if (down) return { status: 'error' as const, error: `the reminder was not delivered: ${down}` };
        context.bus.publishOutbound({ ...origin, content: job.payload.message });
        return { status: 'ok' as const };
      }
      const output = await context.agent().loop.processMessage(turn);
      if (output.error) return { status: 'error' as const, error: output.error.message };
      if (NOTHING_TO_REPORT.test(output.content)) return { status: 'silent' as const };
      if (local) {
        context.log.info(`cron: '${job.name}' (${job.id}) answered in session ${turn.sessionKey}`);
        return { status: 'ok' as const };
      }
      const down = undeliverable(context, origin.channel);
      if (down) return { status: 'error' as const, error: `the answer was not delivered: ${down}` };
      context.bus.publishOutbound({ ...origin, content: output.content });
      return { status: 'ok' as const };
    });
}

/**
 * Why a message for `channel` would be dropped, or undefined when it can go out: the channel runs, or is
 * (re)connecting, and the router's retries wait for it.
 */
export function undeliverable(context: GatewayContext, channel: string): string | undefined {
  const channels = context.channels();
  const health = channels[channel];
  if (!health) {
    const running = Object.keys(channels).join(', ') || 'none';
    return `no channel "${channel}" runs in this gateway (channels: ${running})`;
  }
  if (health.state === 'error' || health.state === 'stopped')
    return `channel "${channel}" is not running (${health.state}${health.error ? `: ${health.error}` : ''})`;
  return undefined;
}

export function cronService(service: CronService, log: Logger = silentLogger): GatewayService {
  const start = () => void service.start().catch(logFailure(log, 'cron: start failed'));
  return { name: 'cron', start, stop: () => service.stop() };
}

/** The chat the user talked in most recently (where heartbeat results go). */
export async function lastActiveChat(
  context: GatewayContext,
): Promise<{ channel: string; chatId: string } | undefined> {
  for (const summary of await context.agent().sessions.list()) {
    if (SYSTEM_PREFIXES.some((p) => summary.key.startsWith(p)) || summary.key.includes(':archived:')) continue;
    const last = (await context.agent().sessions.load(summary.key)).metadata.last_channel;
    if (typeof last !== 'string' || !last.includes(':')) continue;
    const at = last.indexOf(':');
    const channel = last.slice(0, at);
    if (channel !== 'cli') return { channel, chatId: last.slice(at + 1) };
  }
  return undefined;
}

export function heartbeatService(context: GatewayContext): GatewayService {
  const build = (loaded: LoadedConfig) => {
    const beat = loaded.config.gateway.heartbeat;
    const heartbeat = new HeartbeatService({
      workspace: loaded.workspace,
      intervalS: beat.intervalS,
      log: context.log,
      runTurn: heartbeatTurn(context, beat.keepRecentMessages),
      evaluate: (result, tasks) => {
        const agent = context.agent();
        return modelEvaluator(agent.provider, agent.model.model, loaded.workspace)(result, tasks);
      },
      notify: heartbeatNotify(context),
    });
    return { heartbeat, settings: { ...beat, workspace: loaded.workspace } };
  };
  let current = build(context.loaded());
  let started = false;
  // A beat still running when the settings change finishes on its own; shutdown waits for it too.
  const retiring = new Set<Promise<void>>();
  return {
    name: 'heartbeat',
    start: () => {
      started = true;
      if (current.settings.enabled) current.heartbeat.start();
    },
    // Settings saved from the WebUI (or an edited config.json) take effect without a restart.
    reconfigure: (loaded) => {
      const next = build(loaded);
      if (isDeepStrictEqual(next.settings, current.settings)) return;
      const stopping = current.heartbeat.stop().finally(() => retiring.delete(stopping));
      retiring.add(stopping);
      const wasOn = current.settings.enabled;
      current = next;
      if (started && current.settings.enabled) current.heartbeat.start();
      if (current.settings.enabled) context.log.info(`heartbeat: every ${current.settings.intervalS}s now`);
      else if (wasOn) context.log.info('heartbeat: off now (gateway.heartbeat.enabled is false)');
    },
    stop: async () => {
      started = false;
      await Promise.all([current.heartbeat.stop(), ...retiring]);
    },
  };
}

/** One heartbeat turn in the heartbeat session; a failed turn throws (a failed beat is logged, not "nothing new"). */
export function heartbeatTurn(context: GatewayContext, keepRecentMessages: number) {
  return async (prompt: string): Promise<string> => {
    await boundHeartbeatHistory(context, keepRecentMessages);
    const output = await context.agent().loop.processMessage({
      channel: 'system',
      chatId: HEARTBEAT_SESSION,
      sessionKey: HEARTBEAT_SESSION,
      content: prompt,
    });
    if (output.error) throw new Error(`the agent turn failed: ${output.error.message}`);
    return output.content;
  };
}

/** Sends a heartbeat result to the last active chat; throws (a logged failed beat) when it would be dropped. */
export function heartbeatNotify(context: GatewayContext) {
  return async (text: string): Promise<void> => {
    const target = await lastActiveChat(context);
    if (!target) {
      context.log.info('heartbeat: nothing delivered (no chat has talked to the agent yet)');
      return;
    }
    const down = undeliverable(context, target.channel);
    if (down) throw new Error(`the result was not delivered to ${target.channel}:${target.chatId}: ${down}`);
    context.bus.publishOutbound({ ...target, content: text });
  };
}

/**
 * The heartbeat session replays only its last `keep` messages (from a legal start): without this, a heartbeat every
 * 30 minutes grows a history of hundreds of thousands of tokens. Older messages stay in the file (only the
 * consolidation cursor moves), so nothing is lost.
 */
export async function boundHeartbeatHistory(context: GatewayContext, keep: number): Promise<void> {
  const { sessions } = context.agent();
  const session = await sessions.load(HEARTBEAT_SESSION);
  const from = session.messages.length - keep;
  if (from <= session.lastConsolidated) return;
  const start = findLegalStart(session.messages, from);
  session.lastConsolidated = start === -1 ? session.messages.length : start;
  await sessions.save(session);
}

/** Archives sessions idle for `idleCompactAfterMinutes` (their last messages stay replayable). */
export function autoCompactService(context: GatewayContext): GatewayService {
  const defaults = context.loaded().config.agents.defaults;
  const agent = context.agent();
  const compact = new AutoCompact({
    consolidator: agent.consolidator,
    sessions: agent.sessions,
    idleCompactAfterMinutes: defaults.idleCompactAfterMinutes,
    checkIntervalSeconds: defaults.idleCompactCheckIntervalSeconds,
    isActive: (key) => context.agent().loop.isActive(key),
    log: context.log,
  });
  return { name: 'autocompact', start: () => compact.start(), stop: () => compact.stop() };
}

/** Runs Dream every `agents.defaults.dream.intervalH` hours, through the same command the user has. */
export function dreamService(context: GatewayContext): GatewayService {
  const dream = context.loaded().config.agents.defaults.dream;
  let timer: NodeJS.Timeout | undefined;
  const run = async () => {
    const output = await context
      .agent()
      .loop.processMessage({ channel: 'system', chatId: 'dream', sessionKey: 'dream:scheduled', content: '/dream' });
    context.log.info(`dream: ${output.content.split('\n')[0] ?? ''}`);
  };
  return {
    name: 'dream',
    start: () => {
      if (!dream.enabled) return;
      timer = setInterval(
        () => void run().catch((err: Error) => context.log.warn(`dream failed: ${err.message}`)),
        dream.intervalH * 3600_000,
      );
      timer.unref();
    },
    stop: async () => clearInterval(timer),
  };
}

/**
 * nanobot's local triggers (`nanobot trigger trg_…`): each queued delivery runs as a turn in the session the trigger
 * is bound to, and the answer goes to that chat (a `cli` chat keeps it in the session). A delivery whose trigger is
 * gone, or whose channel this gateway does not run, is dropped and recorded as failed (as nanobot does); a turn that
 * could not start is retried, up to 10 attempts.
 */
export function localTriggerService(context: GatewayContext, pollMs = 500): GatewayService {
  const store = new LocalTriggerStore(context.loaded().workspace);
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<void> | undefined;
  const fail = async (delivery: TriggerDelivery, error: string) => {
    await store.record(delivery.triggerId, 'error', error);
    await store.complete(delivery);
    context.log.warn(`trigger ${delivery.triggerId}: dropped delivery ${delivery.id}: ${error}`);
  };
  const deliver = async (delivery: TriggerDelivery) => {
    const trigger = await store.get(delivery.triggerId);
    if (!trigger) return fail(delivery, 'trigger not found');
    if (!trigger.enabled) return fail(delivery, 'trigger is disabled');
    const local = trigger.channel === CLI_CHANNEL;
    const down = local ? undefined : undeliverable(context, trigger.channel);
    if (down) return fail(delivery, `target channel is not enabled: ${down}`);
    let output: Awaited<ReturnType<ReturnType<GatewayContext['agent']>['loop']['processMessage']>>;
    try {
      output = await context.agent().loop.processMessage({
        channel: trigger.channel,
        chatId: trigger.chatId,
        sessionKey: trigger.sessionKey,
        content: `Local trigger received: ${trigger.name || trigger.id}\n\n${delivery.content}`,
      });
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      const again = await store.retry(delivery, error);
      await store.record(delivery.triggerId, 'error', error);
      context.log.warn(
        `trigger ${trigger.id}: delivery ${delivery.id} failed (${error})${again ? '; will retry' : ''}`,
      );
      return;
    }
    if (output.error) return fail(delivery, output.error.message);
    if (!local && output.content.trim() && !NOTHING_TO_REPORT.test(output.content))
      context.bus.publishOutbound({ channel: trigger.channel, chatId: trigger.chatId, content: output.content });
    await store.record(trigger.id, 'ok');
    await store.complete(delivery);
  };
  /** Starts a pass unless one runs; `pass` never rejects (its failure is logged), `stop` awaits it. */
  const drain = (): void => {
    pass ??= (async () => {
      for (const delivery of await store.claim()) await deliver(delivery);
    })()
      .catch(logFailure(context.log, 'triggers: a pass failed'))
      .finally(() => {
        pass = undefined;
      });
  };
  return {
    name: 'local-triggers',
    start: () => {
      void store
        .recover()
        .then((count) => {
          if (count) context.log.warn(`triggers: requeued ${count} delivery file(s) left in processing`);
        })
        .catch(logFailure(context.log, 'triggers: recovery failed'))
        .finally(() => {
          timer = setInterval(drain, pollMs);
          timer.unref();
          drain();
        });
    },
    stop: async () => {
      clearInterval(timer);
      await pass;
    },
  };
}

/** Delivers our free-name `nanobot trigger NAME` files: a turn in session `trigger:<name>`, answered in the last active chat. */
export function triggerService(context: GatewayContext): GatewayService {
  const watcher = new TriggerWatcher({
    workspace: context.loaded().workspace,
    log: context.log,
    deliver: async (trigger) => {
      const output = await context.agent().loop.processMessage({
        channel: 'system',
        chatId: `trigger-${trigger.name}`,
        sessionKey: `trigger:${trigger.name}`,
        content: `[Trigger "${trigger.name}"] ${trigger.message}`,
      });
      if (output.error) throw new Error(output.error.message);
      if (NOTHING_TO_REPORT.test(output.content)) return;
      const target = await lastActiveChat(context);
      if (target) context.bus.publishOutbound({ ...target, content: output.content });
      else context.log.info(`trigger ${trigger.name}: ${output.content.split('\n')[0] ?? ''}`);
    },
  });
  return { name: 'triggers', start: () => watcher.start(), stop: () => watcher.stop() };
}
