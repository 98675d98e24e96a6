/**
 * What every settings action shares: the file's tree to change (camelCase, defaults filled in by `update`), and the
 * answer nanobot gives after a change, the fresh SettingsPayload.
 */

import { type WebuiApiContext, WebuiApiError } from './api.js';
import type { ConfigAccess } from './config-access.js';
import { settingsPayload } from './settings-payload.js';

export type Tree = Record<string, unknown>;

export function configOf(context: WebuiApiContext): ConfigAccess {
  const access = context.backend.config?.();
  if (!access) throw new WebuiApiError(503, 'the settings are not available on this server');
  return access;
}

/** A member of the tree that must be an object, created when missing. */
export function objectAt(tree: Tree, ...path: string[]): Tree {
  let node = tree;
  for (const key of path) {
    const next = node[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Tree;
  }
  return node;
}

export const agentDefaults = (tree: Tree): Tree => objectAt(tree, 'agents', 'defaults');
export const modelPresets = (tree: Tree): Record<string, Tree> =>
  objectAt(tree, 'modelPresets') as Record<string, Tree>;
export const providerBlocks = (tree: Tree): Record<string, Tree> => objectAt(tree, 'providers') as Record<string, Tree>;

/** Applies `mutate` to config.json, then answers with the settings as they now are (plus `extra`). */
export async function writeAndAnswer(
  context: WebuiApiContext,
  mutate: (tree: Tree) => void,
  extra: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const access = configOf(context);
  const { applied } = await access.update(mutate);
  // A change the running gateway could not take (its reload failed) is in the file and waits for a restart.
  const payload = await settingsPayload(access.loaded(), applied ? {} : { restartSections: ['runtime'] });
  return { ...payload, ...extra };
}

export async function answer(context: WebuiApiContext): Promise<Record<string, unknown>> {
  return settingsPayload(configOf(context).loaded());
}
