/**
 * The built `nanobot channels login signal` over a fake `signal-cli` on PATH: it links a new device (the
 * sgnl://linkdevice address printed, drawn as a QR code, then the number the phone linked), leaves an account
 * signal-cli already holds alone, reports a link that timed out, and names signal-cli and where to get it when it is
 * not installed.
 */
import { describe, expect, it } from 'vitest';
import { fakeSignalCliBin } from '../channels/signal/fake-cli.js';
import { editConfig, runCli, tempHome } from './cli-helpers.js';

const NUMBER = '+4915112345678';

async function homeWith(signal: Record<string, unknown>): Promise<string> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  editConfig(home, (c) => {
    const channels = c.channels as Record<string, Record<string, unknown>>;
    channels.signal = { ...channels.signal, ...signal };
  });
  return home;
}

function pathWith(dir: string): string {
  return `${dir}:${process.env.PATH ?? '/usr/bin:/bin'}`;
}

describe('nanobot channels login signal', () => {
  it('links signal-cli as a device: prints the address and its QR code, then the linked number and what is next', async () => {
    const cli = fakeSignalCliBin({ linkNumber: NUMBER });
    const home = await homeWith({ phoneNumber: NUMBER });
    const result = await runCli(['channels', 'login', 'signal'], home, { ...cli.env, PATH: pathWith(cli.dir) });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Linked devices');
    expect(result.stdout).toContain('sgnl://linkdevice?uuid=Zm9vYmFy&pub_key=QmFzZTY0S2V5');
    expect(result.stdout).toMatch(/[▀▄█]{10,}/);
    expect(result.stdout).toContain(`Linked: signal-cli now holds ${NUMBER}`);
    expect(result.stdout).toContain(`daemon --http localhost:8080 --receive-mode on-connection`);
    expect(result.stdout).toContain('register');
    expect(cli.runs().map((run) => run.args)).toEqual([
      ['-o', 'json', 'listAccounts'],
      ['link', '-n', 'nanobot'],
    ]);
  });

  it('says so when the phone linked another number than channels.signal.phoneNumber', async () => {
    const cli = fakeSignalCliBin({ linkNumber: '+15550009999' });
    const home = await homeWith({ phoneNumber: NUMBER });
    const result = await runCli(['channels', 'login', 'signal'], home, { ...cli.env, PATH: pathWith(cli.dir) });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('set it to "+15550009999"');
  });

  it('leaves an account signal-cli already holds alone', async () => {
    const cli = fakeSignalCliBin({ accounts: [NUMBER] });
    const home = await homeWith({ phoneNumber: NUMBER, startDaemon: true });
    const result = await runCli(['channels', 'login', 'signal'], home, { ...cli.env, PATH: pathWith(cli.dir) });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`signal-cli already has the account ${NUMBER}`);
    expect(result.stdout).toContain('The gateway starts the daemon itself');
    expect(cli.runs().some((run) => run.args.includes('link'))).toBe(false);
  });

  it('reports a link that timed out, with what to do', async () => {
    const cli = fakeSignalCliBin({ mode: 'link-timeout' });
    const home = await homeWith({ phoneNumber: NUMBER });
    const result = await runCli(['channels', 'login', 'signal'], home, { ...cli.env, PATH: pathWith(cli.dir) });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('signal-cli link failed (exit 3): Link request timed out, please try again.');
    expect(result.stderr).toContain('scan the new code');
  });

  it('names signal-cli and where to get it when it is not installed', async () => {
    const home = await homeWith({ phoneNumber: NUMBER });
    const result = await runCli(['channels', 'login', 'signal'], home, { PATH: '/usr/bin:/bin' });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('signal-cli was not found');
    expect(result.stderr).toContain('https://github.com/AsamK/signal-cli/releases');
    expect(result.stderr).not.toMatch(/at .*\.js:\d+/);
  });

  it('asks for channels.signal.phoneNumber first', async () => {
    const home = await homeWith({});
    const result = await runCli(['channels', 'login', 'signal'], home, { PATH: '/usr/bin:/bin' });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('channels.signal.phoneNumber is not set');
  });
});
