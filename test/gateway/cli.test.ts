import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayLogs, gatewayStatus, gatewayStop } from '../../src/cli/commands/gateway.js';
import { installService, uninstallService } from '../../src/cli/commands/gateway-service.js';
import { type HealthServer, startHealthServer } from '../../src/gateway/health.js';
import { readState, stateFilePath, writeState } from '../../src/gateway/state-file.js';
import { eventually } from '../helpers/eventually.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0)) await fn();
  process.exitCode = undefined;
});

async function tempHome() {
  const home = await mkdtemp(join(tmpdir(), 'nb-gw-cli-'));
  const dataDir = join(home, '.nanobot');
  mkdirSync(dataDir, { recursive: true });
  let output = '';
  const io = {
    out: (text: string) => {
      output += text;
    },
    env: { HOME: home, PATH: '/usr/bin:/bin' },
  };
  return { home, dataDir, io, output: () => output };
}

/** A stand-in gateway process: alive until SIGTERM (or, `stubborn`, until SIGKILL), "gateway" in its command line. */
function fakeGatewayProcess(stubborn = false): ChildProcess {
  const onTerm = stubborn ? '()=>{}' : '()=>process.exit(0)';
  const child = spawn(
    process.execPath,
    ['-e', `process.on('SIGTERM',${onTerm});setInterval(()=>{},1e3);console.log('ready')`, 'gateway'],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  cleanups.push(() => child.kill('SIGKILL'));
  return child;
}

async function health(): Promise<HealthServer> {
  const server = await startHealthServer({
    host: '127.0.0.1',
    port: 0,
    report: () => ({ provider: 'custom', model: 'test-model', channels: { telegram: 'running' } }),
  });
  cleanups.push(() => server.close());
  return server;
}

describe('health endpoint', () => {
  it('answers GET /health on 127.0.0.1 with port 0 and nothing else', async () => {
    const server = await health();
    const res = await fetch(`http://127.0.0.1:${server.port}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'ok', model: 'test-model', channels: { telegram: 'running' } });
    expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${server.port}/health`, { method: 'POST' })).status).toBe(405);
  });

  it('refuses a non-loopback address unless configured explicitly', async () => {
    const report = () => ({ provider: 'p', model: 'm', channels: {} });
    await expect(startHealthServer({ host: '0.0.0.0', port: 0, report })).rejects.toThrow(/not a loopback/);
  });
});

describe('nanobot gateway status / stop / logs', () => {
  it('status reports a live gateway, stop sends SIGTERM and waits for it to exit', async () => {
    const { dataDir, io, output } = await tempHome();
    const child = fakeGatewayProcess();
    const server = await health();
    const exited = new Promise((resolve) => child.once('exit', resolve));
    writeState(dataDir, {
      pid: child.pid ?? 0,
      host: '127.0.0.1',
      port: server.port,
      startedAt: new Date().toISOString(),
      logFile: join(dataDir, 'logs', 'gateway.log'),
      configPath: join(dataDir, 'config.json'),
    });

    const status = await gatewayStatus({}, io);
    expect(status).toMatchObject({ running: true, pid: child.pid, port: server.port });
    expect(output()).toContain('Gateway: running');
    expect(output()).toContain('test-model via custom');

    expect(await gatewayStop({}, io)).toBe(true);
    await exited;
    const after = await gatewayStatus({}, io);
    expect(after.running).toBe(false);
    expect(process.exitCode).toBe(1);
  });

  it('stop --timeout: a gateway that ignores SIGTERM is killed (SIGKILL) once the timeout is over', async () => {
    const { dataDir, io, output } = await tempHome();
    const child = fakeGatewayProcess(true);
    // Its SIGTERM handler is in place once it printed.
    await new Promise((resolve) => child.stdout?.once('data', resolve));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_c, signal) => resolve(signal)));
    const server = await health();
    writeState(dataDir, {
      pid: child.pid ?? 0,
      host: '127.0.0.1',
      port: server.port,
      startedAt: new Date().toISOString(),
      logFile: join(dataDir, 'logs', 'gateway.log'),
      configPath: join(dataDir, 'config.json'),
    });
    expect(await gatewayStop({ timeout: '0.2' }, io)).toBe(true);
    expect(await exited).toBe('SIGKILL');
    expect(output()).toContain('did not exit within 0.2 s of SIGTERM; killed it (SIGKILL)');
    expect(existsSync(stateFilePath(dataDir))).toBe(false);
    await expect(gatewayStop({ timeout: 'soon' }, io)).rejects.toThrow(/--timeout expects seconds/);
  });

  it('status says "not running" without a state file', async () => {
    const { io, output } = await tempHome();
    expect(await gatewayStatus({}, io)).toEqual({ running: false });
    expect(output()).toContain('not running');
    expect(await gatewayStop({}, io)).toBe(false);
  });

  it('names a damaged state file and what is wrong, then reads it as "not running"', async () => {
    const { dataDir } = await tempHome();
    const bad = ['{"pid":', '[]', '{"pid":"12","port":80}', '{"pid":12}', ''];
    const problems: string[] = [];
    for (const text of bad) {
      writeFileSync(stateFilePath(dataDir), text);
      expect(readState(dataDir, (p) => problems.push(p))).toBeUndefined();
    }
    expect(problems).toHaveLength(bad.length);
    for (const p of problems) expect(p).toContain(`gateway state file ${stateFilePath(dataDir)}`);
    expect(problems[0]).toMatch(/is not valid JSON/);
    expect(problems[2]).toMatch(/wrong shape: pid: .*expected number/);
    expect(problems[3]).toMatch(/wrong shape: port: .*expected number/);
  });

  it('logs prints the last N lines', async () => {
    const { dataDir, io, output } = await tempHome();
    mkdirSync(join(dataDir, 'logs'));
    const lines = Array.from({ length: 300 }, (_, i) => `line ${i + 1}`);
    writeFileSync(join(dataDir, 'logs', 'gateway.log'), `${lines.join('\n')}\n`);
    await gatewayLogs({ tail: '3' }, io);
    expect(output()).toBe('line 298\nline 299\nline 300\n');
  });

  it('logs --follow prints lines appended later', async () => {
    const { dataDir, io, output } = await tempHome();
    mkdirSync(join(dataDir, 'logs'));
    const file = join(dataDir, 'logs', 'gateway.log');
    writeFileSync(file, 'old\n');
    const stop = new AbortController();
    const following = gatewayLogs({ tail: '1', follow: true }, io, stop.signal);
    // Gates on what it printed, not guessed delays: the tail first, then the line appended after it.
    await eventually(() => output() === 'old\n');
    writeFileSync(file, 'old\nnew line\n');
    await eventually(() => output() === 'old\nnew line\n');
    stop.abort();
    await following;
    expect(output()).toBe('old\nnew line\n');
  });
});

describe('nanobot gateway install-service', () => {
  it('--dry-run prints the systemd unit and the commands, and writes nothing', async () => {
    const { home, io, output } = await tempHome();
    const ran: string[][] = [];
    const unit = await installService({ dryRun: true, manager: 'systemd' }, io, (argv) => ran.push(argv));
    const file = join(home, '.config', 'systemd', 'user', 'nanobot-gateway.service');
    expect(unit).toContain(`ExecStart=${process.execPath} `);
    expect(unit).toMatch(/bin\/nanobot\.js gateway\n/);
    expect(unit).toContain('Restart=on-failure');
    expect(output()).toContain(`Would write ${file}`);
    expect(output()).toContain('systemctl --user enable --now nanobot-gateway.service');
    expect(existsSync(file)).toBe(false);
    expect(ran).toEqual([]);
  });

  it('writes the unit and runs systemctl', async () => {
    const { home, io } = await tempHome();
    const ran: string[][] = [];
    await installService({ name: 'nb-test', config: join(home, 'cfg.json'), manager: 'systemd' }, io, (argv) =>
      ran.push(argv),
    );
    const file = join(home, '.config', 'systemd', 'user', 'nb-test.service');
    expect(existsSync(file)).toBe(true);
    expect(ran).toEqual([
      ['systemctl', '--user', 'daemon-reload'],
      ['systemctl', '--user', 'enable', '--now', 'nb-test.service'],
    ]);
  });

  it('--no-start / --no-enable / -p change what runs, as in nanobot', async () => {
    const cases: [object, string[][]][] = [
      [{ start: false }, [['systemctl', '--user', 'enable', 'nb.service']]],
      [{ enable: false }, [['systemctl', '--user', 'restart', 'nb.service']]],
      [{ enable: false, start: false }, []],
    ];
    for (const [flags, after] of cases) {
      const { io } = await tempHome();
      const ran: string[][] = [];
      await installService({ name: 'nb', manager: 'systemd', ...flags }, io, (argv) => ran.push(argv));
      expect(ran, JSON.stringify(flags)).toEqual([['systemctl', '--user', 'daemon-reload'], ...after]);
    }
    const { io } = await tempHome();
    const unit = await installService({ dryRun: true, manager: 'systemd', port: '18999' }, io);
    expect(unit).toMatch(/gateway --port 18999\n/);
    await expect(installService({ dryRun: true, manager: 'systemd', port: 'x' }, io)).rejects.toThrow(/--port/);
    const plist = await installService({ dryRun: true, manager: 'launchd', enable: false, start: false }, io);
    expect(plist).toContain('<key>RunAtLoad</key><false/>');
  });

  it('uninstall-service stops and disables it, deletes the file, reloads; a failing step does not stop the rest', async () => {
    const { home, io, output } = await tempHome();
    await installService({ name: 'nb', manager: 'systemd' }, io, () => {});
    const file = join(home, '.config', 'systemd', 'user', 'nb.service');
    expect(readFileSync(file, 'utf8')).toContain('ExecStart=');
    const ran: string[][] = [];
    await uninstallService({ name: 'nb', manager: 'systemd' }, io, (argv) => {
      ran.push(argv);
      if (argv.includes('disable')) throw new Error('Unit nb.service not loaded.');
    });
    expect(ran).toEqual([
      ['systemctl', '--user', 'disable', '--now', 'nb.service'],
      ['systemctl', '--user', 'daemon-reload'],
    ]);
    expect(existsSync(file)).toBe(false);
    expect(output()).toContain(`Deleted ${file}`);
    expect(output()).toContain('failed (Unit nb.service not loaded.); continuing');

    const again = await tempHome();
    await uninstallService({ manager: 'launchd', dryRun: true }, again.io);
    expect(again.output()).toContain('launchctl bootout gui/');
    expect(again.output()).toContain(join(again.home, 'Library', 'LaunchAgents', 'nanobot-gateway.plist'));
  });

  it('--dry-run on macOS prints a launchd plist', async () => {
    const { home, io, output } = await tempHome();
    const plist = await installService({ dryRun: true, manager: 'launchd' }, io);
    expect(plist).toContain('<key>Label</key><string>nanobot-gateway</string>');
    expect(plist).toContain('<string>gateway</string>');
    expect(output()).toContain(join(home, 'Library', 'LaunchAgents', 'nanobot-gateway.plist'));
    expect(output()).toContain('launchctl bootstrap');
  });
});
