/**
 * The settings API's way to the config: it reads what the gateway runs and changes the file the CLI changes, through
 * the same `updateConfigFile` (defaults filled in, validated, written atomically, mode 0600), then applies it at once
 * with the gateway's hot reload instead of waiting for the file watcher. Writes run one at a time, so two quick
 * changes from the WebUI cannot overwrite each other.
 */
import type { LoadedConfig } from '../config/load.js';
import { updateConfigFile } from '../config/onboard.js';
import { UserError } from '../util/errors.js';
import { WebuiApiError } from './api.js';

export interface ConfigAccess {
  /** The config the gateway runs now. */
  loaded(): LoadedConfig;
  /**
   * Applies `mutate` to the file's tree (camelCase keys, every default block present). A change the schema refuses
   * is a 400 and leaves the file as it was; `applied` is false when the gateway kept its previous config.
   */
  update(mutate: (raw: Record<string, unknown>) => void): Promise<{ applied: boolean }>;
}

export function configAccess(
  loaded: () => LoadedConfig,
  reload: () => Promise<boolean>,
  env: NodeJS.ProcessEnv = process.env,
): ConfigAccess {
  let queue: Promise<unknown> = Promise.resolve();
  const write = async (mutate: (raw: Record<string, unknown>) => void) => {
    try {
      await updateConfigFile(loaded().configPath, mutate, env);
    } catch (error) {
      if (error instanceof UserError) throw new WebuiApiError(400, error.message);
      throw error;
    }
    return { applied: await reload() };
  };
  return {
    loaded,
    update(mutate) {
      const next = queue.then(
        () => write(mutate),
        () => write(mutate),
      );
      queue = next.catch(() => undefined);
      return next;
    },
  };
}
