/**
 * The bot device's end-to-end keys, kept across restarts. matrix-js-sdk's Rust crypto persists its store (the
 * device's identity keys, Olm sessions, every room key it received) in IndexedDB, which Node lacks, so the store
 * lives in fake-indexeddb (an in-memory IndexedDB) and is written out as one snapshot file,
 * `<dataDir>/matrix/crypto/<device>.idb` (0600, atomically replaced), restored before the crypto starts.
 *
 * When it is written: right after the crypto starts (the new device's keys exist before they are uploaded), and
 * after every sync has been processed, before the next /sync request acknowledges it (the client store's `save`
 * hook): a room key that arrived in a to-device message is on disk before the homeserver may delete that message.
 * Also after each send and on disconnect. An unchanged store is not written again.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { errorMessage } from '../../util/errors.js';
import { writeFileAtomic } from '../../util/fs.js';
import type { Logger } from '../../util/log.js';

/** The part of the IndexedDB API used here (the project's TypeScript has no DOM types). */
interface Request<T> {
  result: T;
  error: unknown;
  onsuccess: (() => void) | null;
  onerror: (() => void) | null;
}
interface OpenRequest extends Request<Database> {
  onupgradeneeded: (() => void) | null;
}
interface Index {
  keyPath: string | string[];
  unique: boolean;
  multiEntry: boolean;
}
interface ObjectStore {
  keyPath: string | string[] | null;
  autoIncrement: boolean;
  indexNames: Iterable<string>;
  index(name: string): Index;
  getAll(): Request<unknown[]>;
  getAllKeys(): Request<unknown[]>;
  put(value: unknown, key?: unknown): unknown;
  createIndex(name: string, keyPath: string | string[], options: { unique: boolean; multiEntry: boolean }): unknown;
}
interface Transaction {
  error: unknown;
  objectStore(name: string): ObjectStore;
  oncomplete: (() => void) | null;
  onerror: (() => void) | null;
  onabort: (() => void) | null;
}
interface Database {
  version: number;
  objectStoreNames: Iterable<string>;
  transaction(names: string[], mode: 'readonly' | 'readwrite'): Transaction;
  createObjectStore(name: string, options: { keyPath: string | string[] | null; autoIncrement: boolean }): ObjectStore;
  close(): void;
}
interface Factory {
  open(name: string, version?: number): OpenRequest;
  databases(): Promise<{ name?: string }[]>;
}
/** fake-indexeddb's exports: the factory class and the globals the Rust crypto expects beside `indexedDB`. */
export type FakeIndexedDb = { IDBFactory: new () => unknown } & Record<string, unknown>;

interface IndexShape {
  name: string;
  keyPath: string | string[];
  unique: boolean;
  multiEntry: boolean;
}
interface StoreShape {
  name: string;
  keyPath: string | string[] | null;
  autoIncrement: boolean;
  indexes: IndexShape[];
  records: [unknown, unknown][];
}
interface DatabaseShape {
  name: string;
  version: number;
  stores: StoreShape[];
}
interface Snapshot {
  format: 1;
  databases: DatabaseShape[];
}

/** The snapshot file of one device (a different device of the account has different keys: its own file). */
export function cryptoStorePath(dataDir: string, userId: string, deviceId: string): string {
  const id = createHash('sha256').update(`${userId}\0${deviceId}`).digest('hex').slice(0, 16);
  return join(dataDir, 'matrix', 'crypto', `${deviceId.replace(/[^A-Za-z0-9_-]/g, '_')}-${id}.idb`);
}

/** What `nanobot channels status` shows about the device: written by the gateway when its crypto starts. */
export interface DeviceStatus {
  deviceId: string;
  fingerprint: string;
  verified: boolean;
}

export function deviceStatusPath(dataDir: string): string {
  return join(dataDir, 'matrix', 'e2ee-device.json');
}

export async function writeDeviceStatus(dataDir: string, status: DeviceStatus): Promise<void> {
  await writeFileAtomic(deviceStatusPath(dataDir), `${JSON.stringify(status, null, 2)}\n`, 0o600);
}

export function readDeviceStatus(dataDir: string): DeviceStatus | undefined {
  try {
    const value = JSON.parse(readFileSync(deviceStatusPath(dataDir), 'utf8')) as Partial<DeviceStatus>;
    if (typeof value.deviceId !== 'string' || typeof value.fingerprint !== 'string') return undefined;
    return { deviceId: value.deviceId, fingerprint: value.fingerprint, verified: value.verified === true };
  } catch {
    return undefined;
  }
}

export class CryptoStore {
  private lastHash = '';
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    private readonly factory: Factory,
    private readonly path: string,
    private readonly log: Logger,
  ) {}

  /**
   * A fresh in-memory IndexedDB holding what the file saved, installed as the global `indexedDB` the Rust crypto
   * opens next (each client gets its own factory, so a restarted channel in the same process starts clean).
   */
  static async open(fake: FakeIndexedDb, path: string, log: Logger): Promise<CryptoStore> {
    const factory = new fake.IDBFactory() as Factory;
    const store = new CryptoStore(factory, path, log);
    let saved: Buffer | undefined;
    try {
      saved = await readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw cannotRead(path, err);
    }
    if (saved) {
      let snapshot: Snapshot;
      try {
        snapshot = deserialize(saved) as Snapshot;
        if (snapshot.format !== 1 || !Array.isArray(snapshot.databases)) throw new Error('unknown format');
      } catch (err) {
        throw cannotRead(path, err);
      }
      for (const db of snapshot.databases) await restore(factory, db);
      store.lastHash = hashOf(saved);
    }
    const scope = globalThis as Record<string, unknown>;
    scope.indexedDB = factory;
    for (const name of ['IDBKeyRange', 'IDBCursor', 'IDBRequest', 'IDBTransaction', 'IDBDatabase', 'IDBObjectStore'])
      scope[name] ??= fake[name];
    return store;
  }

  /** Writes the store out if it changed; one write at a time, in order. Never throws (logs instead). */
  save(): Promise<void> {
    this.writing = this.writing.then(async () => {
      try {
        const databases: DatabaseShape[] = [];
        for (const info of await this.factory.databases()) {
          if (info.name) databases.push(await dump(this.factory, info.name));
        }
        const data = serialize({ format: 1, databases } satisfies Snapshot);
        const hash = hashOf(data);
        if (hash === this.lastHash) return;
        await mkdir(join(this.path, '..'), { recursive: true, mode: 0o700 });
        await writeFileAtomic(this.path, data, 0o600);
        this.lastHash = hash;
      } catch (err) {
        this.log.warn(`could not save the Matrix encryption keys to ${this.path}: ${errorMessage(err)}`);
      }
    });
    return this.writing;
  }
}

function cannotRead(path: string, err: unknown): Error {
  return new Error(
    `the Matrix encryption key store ${path} cannot be read (${errorMessage(err)}); ` +
      'move it away to start over with a new device (channels.matrix.deviceId), which cannot read old messages',
  );
}

const hashOf = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

function done<T>(request: Request<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error('IndexedDB request failed'));
  });
}

function finished(tx: Transaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new Error('IndexedDB transaction failed'));
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
  });
}

async function dump(factory: Factory, name: string): Promise<DatabaseShape> {
  const db = await done(factory.open(name));
  try {
    const names = [...db.objectStoreNames];
    const shape: DatabaseShape = { name, version: db.version, stores: [] };
    if (names.length === 0) return shape;
    // One read-only transaction over every store: a consistent picture of the database.
    const tx = db.transaction(names, 'readonly');
    const reads = names.map(async (storeName) => {
      const store = tx.objectStore(storeName);
      const [keys, values] = await Promise.all([done(store.getAllKeys()), done(store.getAll())]);
      const indexes = [...store.indexNames].map((indexName) => {
        const index = store.index(indexName);
        return { name: indexName, keyPath: index.keyPath, unique: index.unique, multiEntry: index.multiEntry };
      });
      shape.stores.push({
        name: storeName,
        keyPath: store.keyPath,
        autoIncrement: store.autoIncrement,
        indexes,
        records: keys.map((key, i) => [key, values[i]]),
      });
    });
    await Promise.all([...reads, finished(tx)]);
    return shape;
  } finally {
    db.close();
  }
}

async function restore(factory: Factory, shape: DatabaseShape): Promise<void> {
  const request = factory.open(shape.name, shape.version);
  request.onupgradeneeded = () => {
    const db = request.result;
    for (const store of shape.stores) {
      const created = db.createObjectStore(store.name, {
        keyPath: store.keyPath,
        autoIncrement: store.autoIncrement,
      });
      for (const index of store.indexes) {
        created.createIndex(index.name, index.keyPath, { unique: index.unique, multiEntry: index.multiEntry });
      }
    }
  };
  const db = await done(request);
  try {
    if (shape.stores.length === 0) return;
    const tx = db.transaction(
      shape.stores.map((s) => s.name),
      'readwrite',
    );
    for (const store of shape.stores) {
      const target = tx.objectStore(store.name);
      for (const [key, value] of store.records) {
        if (store.keyPath === null) target.put(value, key);
        else target.put(value);
      }
    }
    await finished(tx);
  } finally {
    db.close();
  }
}
