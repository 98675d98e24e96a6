/**
 * Config hot reload: re-read the file, rebuild the agent only when its settings changed, swap it in between turns,
 * and keep running the previous config when the edit is invalid. Reloads run one at a time.
 */
import type { LoadedConfig } from '../config/load.js';
import type { DispatcherSettings } from '../gateway/dispatcher.js';
import { errorMessage, UserError } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { Agent } from './agent.js';

/** The gateway's live config and agent, which a reload replaces. */
export interface ReloadTarget {
  loaded(): LoadedConfig;
  agent(): Agent;
  setLoaded(next: LoadedConfig): void;
  /** Makes `fresh` the live agent; the previous one is kept for the final shutdown. */
  replaceAgent(fresh: Agent): void;
}

export interface ReloaderOptions {
  target: ReloadTarget;
  reloadConfig: () => Promise<LoadedConfig>;
  buildAgent: (loaded: LoadedConfig) => Promise<Agent>;
  dispatcher: {
    replaceLoop(loop: Agent['loop']): Promise<boolean>;
    updateSettings(settings: Partial<DispatcherSettings>): void;
  };
  closing: () => boolean;
  onReload?: ((loaded: LoadedConfig) => void | Promise<void>) | undefined;
  log: Logger;
}

/** `reload()`: true when the edit was applied, false when it was ignored (the old config stays). */
export function configReloader(options: ReloaderOptions): () => Promise<boolean> {
  const { target, dispatcher, log } = options;
  const applyReload = async (): Promise<boolean> => {
    if (options.closing()) return false;
    let next: LoadedConfig;
    try {
      next = await options.reloadConfig();
    } catch (err) {
      log.warn(`gateway: config edit ignored, still running the previous config: ${describe(err)}`);
      return false;
    }
    const [before, after] = [target.loaded().config.gateway, next.config.gateway];
    if (before.host !== after.host || before.port !== after.port) {
      log.warn('gateway: gateway.host/port changes apply after a restart');
    }
    if (agentSettingsChanged(target.loaded(), next)) {
      let fresh: Agent;
      try {
        fresh = await options.buildAgent(next);
      } catch (err) {
        log.warn(`gateway: config edit ignored, the agent could not be built from it: ${describe(err)}`);
        return false;
      }
      // Between turns: the dispatcher holds new turns until the running ones end, then swaps.
      if (!(await dispatcher.replaceLoop(fresh.loop))) {
        await fresh.shutdown();
        return false;
      }
      // Background exec sessions of the old agent may still be in use: they are ended at exit. Its MCP servers are
      // not (the new agent started its own), so they stop now rather than piling up with every config edit.
      await target.agent().mcp?.close();
      target.replaceAgent(fresh);
    }
    target.setLoaded(next);
    dispatcher.updateSettings(dispatcherSettings(next));
    const agent = target.agent();
    log.info(`gateway: config reloaded (model ${agent.model.model} via ${agent.provider.name})`);
    try {
      await options.onReload?.(next);
    } catch (err) {
      log.warn(`gateway: a reload listener failed: ${errorMessage(err)}`);
    }
    return true;
  };
  let reloading: Promise<boolean> = Promise.resolve(true);
  return () => {
    reloading = reloading.then(applyReload, applyReload);
    return reloading;
  };
}

export function dispatcherSettings(loaded: LoadedConfig): Partial<DispatcherSettings> {
  return {
    sendToolHints: loaded.config.channels.sendToolHints,
    showReasoning: loaded.config.channels.showReasoning,
    toolHintMaxLength: loaded.config.agents.defaults.toolHintMaxLength,
  };
}

/** Everything except channel and gateway settings feeds the agent (provider, model, keys, tools…). */
export function agentSettingsChanged(before: LoadedConfig, after: LoadedConfig): boolean {
  const relevant = ({ config }: LoadedConfig) => {
    const { channels: _channels, gateway: _gateway, ...rest } = config;
    return JSON.stringify(rest);
  };
  return relevant(before) !== relevant(after);
}

function describe(err: unknown): string {
  return err instanceof UserError ? err.message.replace(/\n\s*/g, ' ') : errorMessage(err);
}
