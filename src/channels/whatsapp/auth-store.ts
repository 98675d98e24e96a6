/**
 * The linked device's keys, in the folder layout of Baileys' `useMultiFileAuthState` (creds.json plus one
 * `<type>-<id>.json` per key, JSON with Baileys' Buffer encoding): the folder upstream nanobot's WhatsApp bridge kept
 * (~/.nanobot/whatsapp-auth), so a session linked there keeps working. Unlike the stock helper, the folder is 0700, every
 * file 0600 and written atomically (a crash mid-write must not corrupt the session and force a new QR scan).
 */
import { chmod, mkdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { AuthenticationCreds, SignalDataTypeMap, SignalKeyStore } from 'baileys';
import { writeFileAtomic } from '../../util/fs.js';

/** What the channel needs from the SDK to read and write the files (passed in: the SDK loads lazily). */
export interface AuthSdk {
  BufferJSON: { replacer: (key: string, value: unknown) => unknown; reviver: (key: string, value: unknown) => unknown };
  initAuthCreds: () => AuthenticationCreds;
  /** `proto.Message.AppStateSyncKeyData.fromObject`: app-state keys are protobuf objects in memory. */
  appStateKey: (value: unknown) => unknown;
}

export interface AuthStore {
  creds: AuthenticationCreds;
  keys: SignalKeyStore;
  saveCreds(): Promise<void>;
}

/** `useMultiFileAuthState`'s file naming: `/` and `:` are not safe in file names. */
const fileName = (name: string) => name.replace(/\//g, '__').replace(/:/g, '-');

/** A key id must stay inside the folder whatever the server sends as an id. */
const safeId = (id: string) => /^[\w.@:+\-/=]+$/.test(id) && !id.includes('..');

export async function openAuthStore(folder: string, sdk: AuthSdk): Promise<AuthStore> {
  await mkdir(folder, { recursive: true, mode: 0o700 });
  await chmod(folder, 0o700);
  const read = async (name: string): Promise<unknown> => {
    try {
      return JSON.parse(await readFile(join(folder, fileName(name)), 'utf8'), sdk.BufferJSON.reviver);
    } catch {
      return null;
    }
  };
  const write = (name: string, value: unknown) =>
    writeFileAtomic(join(folder, fileName(name)), JSON.stringify(value, sdk.BufferJSON.replacer), 0o600);
  const creds = ((await read('creds.json')) as AuthenticationCreds | null) ?? sdk.initAuthCreds();
  const keys: SignalKeyStore = {
    async get<T extends keyof SignalDataTypeMap>(type: T, ids: string[]) {
      const found: { [id: string]: SignalDataTypeMap[T] } = {};
      for (const id of ids) {
        if (!safeId(id)) continue;
        let value = await read(`${type}-${id}.json`);
        if (type === 'app-state-sync-key' && value) value = sdk.appStateKey(value);
        if (value) found[id] = value as SignalDataTypeMap[T];
      }
      return found;
    },
    async set(data) {
      for (const [type, entries] of Object.entries(data)) {
        for (const [id, value] of Object.entries(entries ?? {})) {
          if (!safeId(id)) continue;
          const name = `${type}-${id}.json`;
          if (value) await write(name, value);
          else await rm(join(folder, fileName(name)), { force: true });
        }
      }
    },
  };
  return { creds, keys, saveCreds: () => write('creds.json', creds) };
}

/** Whether a linked session is saved there (creds.json with a registered account). */
export async function hasLinkedSession(folder: string): Promise<boolean> {
  try {
    const file = join(folder, 'creds.json');
    if (!(await stat(file)).isFile()) return false;
    const creds = JSON.parse(await readFile(file, 'utf8')) as { me?: { id?: unknown } };
    return typeof creds.me?.id === 'string';
  } catch {
    return false;
  }
}

/** Logged out on the phone: the keys are worthless, and a new login starts from an empty folder. */
export async function forgetSession(folder: string): Promise<void> {
  await rm(folder, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
}
