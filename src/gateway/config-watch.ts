/**
 * Watches the config file for edits. Editors often save by writing a temp file and renaming it over the original,
 * which ends a watch on the file itself, so the directory is watched and events are filtered by name.
 */
import { type FSWatcher, readFileSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';

export interface ConfigWatcher {
  close(): void;
}

/** Calls `onChange` once per settled edit (debounced) whose content differs from the last one seen. */
export function watchConfigFile(
  path: string,
  onChange: () => void,
  log: Logger,
  debounceMs = 300,
): ConfigWatcher | undefined {
  const name = basename(path);
  let last = readText(path);
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher;
  try {
    watcher = watch(dirname(path), (_event, file) => {
      if (file !== null && file !== name) return;
      clearTimeout(timer);
      timer = setTimeout(() => {
        const text = readText(path);
        if (text === undefined || text === last) return;
        last = text;
        onChange();
      }, debounceMs);
    });
  } catch (err) {
    log.warn(`gateway: cannot watch ${path} for changes (${errorMessage(err)}); restart to apply config edits`);
    return undefined;
  }
  watcher.on('error', (err) => log.warn(`gateway: config watch stopped: ${errorMessage(err)}`));
  return {
    close() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
