/**
 * A real dovecot IMAP server for the email tests, started from a scratch directory (no system config, no systemd):
 * plain IMAP on 127.0.0.1, one shared password for every account (`passdb static`), maildir under the scratch dir.
 * Mail processes run as `vmail`, which is created when missing (the tests run as root, as CI does).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const MAIL_PASSWORD = 'mail-secret';

const DOVECOT_CANDIDATES = ['/usr/sbin/dovecot', '/usr/local/sbin/dovecot'];
const DOVEADM_CANDIDATES = ['/usr/bin/doveadm', '/usr/local/bin/doveadm'];

/** The dovecot binary, or undefined when it is not installed (the email tests are skipped then). */
export const DOVECOT = DOVECOT_CANDIDATES.find((path) => existsSync(path));
if (!DOVECOT) {
  console.warn('email channel tests skipped: dovecot is not installed (apt-get install dovecot-imapd dovecot-core)');
}
const DOVEADM = DOVEADM_CANDIDATES.find((path) => existsSync(path)) ?? 'doveadm';

export interface Dovecot {
  port: number;
  dir: string;
  /** Disconnects every IMAP session of `user`, as an admin would (`doveadm kick`). */
  kick(user: string): void;
  /** Stops the server (the port refuses connections) until `start`. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** The server log, for failure messages. */
  log(): string;
}

export interface DovecotOptions {
  /** Advertise no IDLE, like servers without it (clients must poll). */
  withoutIdle?: boolean;
}

export async function startDovecot(options: DovecotOptions = {}): Promise<Dovecot> {
  if (!DOVECOT) throw new Error('dovecot is not installed');
  const binary = DOVECOT;
  ensureVmailUser();
  const dir = mkdtempSync(join(tmpdir(), 'nb-dovecot-'));
  chmodSync(dir, 0o711);
  const port = await freePort();
  mkdirSync(join(dir, 'run', 'state'), { recursive: true });
  mkdirSync(join(dir, 'mail'), { recursive: true });
  chownSync(join(dir, 'mail'), vmailId('-u'), vmailId('-g'));
  const configPath = join(dir, 'dovecot.conf');
  writeFileSync(configPath, config(dir, port, options));
  let child: ChildProcess | undefined;

  const start = async () => {
    // Its own process group: stopping ends every dovecot process (a stopped master leaves sessions running).
    const started = spawn(binary, ['-F', '-c', configPath], { stdio: 'ignore', detached: true });
    child = started;
    // A test process that dies without its afterAll must not leave a server behind.
    const orphanGuard = () => killGroup(started, 'SIGKILL');
    process.once('exit', orphanGuard);
    started.once('exit', () => process.off('exit', orphanGuard));
    await waitForGreeting(port, () => readLog(dir));
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    killGroup(running, 'SIGTERM');
    const timer = setTimeout(() => killGroup(running, 'SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    // Sessions still closing get a moment, then go too.
    await new Promise((resolve) => setTimeout(resolve, 100));
    killGroup(running, 'SIGKILL');
  };
  await start();
  return {
    port,
    dir,
    kick: (user) => {
      execFileSync(DOVEADM, ['-c', configPath, 'kick', user], { stdio: 'ignore' });
    },
    stop,
    start,
    log: () => readLog(dir),
  };
}

/** Stops dovecot and deletes its scratch directory. */
export async function removeDovecot(dovecot: Dovecot | undefined): Promise<void> {
  if (!dovecot) return;
  await dovecot.stop();
  rmSync(dovecot.dir, { recursive: true, force: true });
}

const CAPABILITIES_WITHOUT_IDLE =
  'IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE SORT MULTIAPPEND UNSELECT CHILDREN NAMESPACE UIDPLUS LIST-EXTENDED LITERAL+ MOVE';

function config(dir: string, port: number, options: DovecotOptions): string {
  const capability = options.withoutIdle ? `imap_capability = ${CAPABILITIES_WITHOUT_IDLE}\n` : '';
  return `${capability}protocols = imap
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/run/state
log_path = ${dir}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:${dir}/mail/%u
mail_uid = vmail
mail_gid = vmail
first_valid_uid = 1
mailbox_idle_check_interval = 1 secs
passdb {
  driver = static
  args = password=${MAIL_PASSWORD}
}
userdb {
  driver = static
  args = uid=vmail gid=vmail home=${dir}/mail/%u
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
}
namespace inbox {
  inbox = yes
}
`;
}

function killGroup(process: ChildProcess, signal: NodeJS.Signals): void {
  if (process.pid === undefined) return;
  try {
    globalThis.process.kill(-process.pid, signal);
  } catch {
    // The group is gone already.
  }
}

function ensureVmailUser(): void {
  try {
    execFileSync('id', ['vmail'], { stdio: 'ignore' });
  } catch {
    execFileSync('useradd', ['-r', '-M', '-s', '/usr/sbin/nologin', 'vmail'], { stdio: 'ignore' });
  }
}

function vmailId(flag: '-u' | '-g'): number {
  return Number(execFileSync('id', [flag, 'vmail'], { encoding: 'utf8' }).trim());
}

function readLog(dir: string): string {
  try {
    return readFileSync(join(dir, 'dovecot.log'), 'utf8');
  } catch {
    return '';
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/** Resolves once the server answers with its IMAP greeting (it takes well under a second). */
async function waitForGreeting(port: number, log: () => string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const greeted = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port });
      socket.setTimeout(1_000, () => socket.destroy());
      socket.once('data', (data) => {
        socket.destroy();
        resolve(data.toString().startsWith('* OK'));
      });
      socket.once('error', () => resolve(false));
      socket.once('close', () => resolve(false));
    });
    if (greeted) return;
    if (Date.now() > deadline) throw new Error(`dovecot did not start on port ${port}:\n${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
