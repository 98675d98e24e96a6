/**
 * `nanobot channels login signal`: links signal-cli to an existing Signal account as a new device named "nanobot"
 * (`signal-cli link -n nanobot` prints an `sgnl://linkdevice?…` address; the phone scans it as a QR code), or says
 * how to register a number of the agent's own. An account signal-cli already has needs neither.
 */
import { spawn } from 'node:child_process';
import { UserError } from '../../util/errors.js';
import type { LoginContext } from '../definition.js';
import { daemonArgs, missingBinary } from './daemon.js';
import type { SignalSettings } from './index.js';

const LINK_URI = /^(?:sgnl:\/\/linkdevice\?|tsdevice:\/?\?)\S+$/;
const ASSOCIATED = /Associated with:\s*(\+\d+)/;

export async function linkDevice(settings: SignalSettings, context: LoginContext): Promise<void> {
  const cli = settings.cliPath.trim();
  const account = settings.phoneNumber.trim();
  const { out } = context;
  const known = await listAccounts(cli);
  if (known.includes(account)) {
    out(`signal-cli already has the account ${account}: nothing to link.\n${nextSteps(settings)}`);
    return;
  }
  out(
    `Linking signal-cli to the Signal account ${account} as a new device named "nanobot".\n` +
      '(To give the agent a number of its own instead, register it: ' +
      `\`${cli} -a ${account} register\` (add --voice for a call; if asked for a captcha, solve ` +
      'https://signalcaptchas.org/registration/generate.html and pass --captcha), then ' +
      `\`${cli} -a ${account} verify <code>\`.)\n\n`,
  );
  const number = await runLink(cli, context);
  out(`Linked: signal-cli now holds ${number} as the device "nanobot".\n`);
  if (number !== account)
    out(`Note: that is not channels.signal.phoneNumber (${account}): set it to "${number}" in config.json.\n`);
  out(nextSteps({ ...settings, phoneNumber: number }));
}

function nextSteps(settings: SignalSettings): string {
  const start = settings.startDaemon
    ? 'The gateway starts the daemon itself (startDaemon is on).'
    : `Start the daemon: \`${settings.cliPath.trim()} ${daemonArgs(settings.phoneNumber.trim(), settings.daemonHost, settings.daemonPort).join(' ')}\` ` +
      '(or set channels.signal.startDaemon to true).';
  return `${start}\nThen set channels.signal.enabled to true and (re)start \`nanobot gateway\`.\n`;
}

/** The accounts signal-cli holds; empty when it cannot say (an old version without listAccounts). */
async function listAccounts(cli: string): Promise<string[]> {
  const { code, stdout } = await run(cli, ['-o', 'json', 'listAccounts']);
  if (code !== 0) return [];
  try {
    const parsed: unknown = JSON.parse(stdout);
    if (!Array.isArray(parsed)) return [];
    return parsed.flatMap((entry: unknown) => {
      const number = (entry as { number?: unknown } | null)?.number;
      return typeof number === 'string' ? [number] : [];
    });
  } catch {
    return [];
  }
}

/** Runs `signal-cli link`, shows the address to scan, resolves with the linked number. */
function runLink(cli: string, context: LoginContext): Promise<string> {
  const { out } = context;
  const { qr, signal } = context;
  return new Promise((resolve, reject) => {
    const child = spawn(cli, ['link', '-n', 'nanobot'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const abort = () => child.kill('SIGTERM');
    signal?.addEventListener('abort', abort, { once: true });
    let number: string | undefined;
    let errors = '';
    let shown = Promise.resolve();
    let partial = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines.map((l) => l.trim())) {
        if (LINK_URI.test(line)) shown = shown.then(() => showLink(line, out, qr));
        number ??= ASSOCIATED.exec(line)?.[1];
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      errors = (errors + chunk).slice(-2000);
    });
    child.once('error', (err: NodeJS.ErrnoException) => reject(missingBinary(cli, err)));
    child.once('close', (code) => {
      signal?.removeEventListener('abort', abort);
      number ??= ASSOCIATED.exec(partial)?.[1];
      void shown.then(
        () => {
          if (code === 0 && number) resolve(number);
          else if (signal?.aborted) reject(new UserError('Linking was cancelled.'));
          else
            reject(
              new UserError(
                `signal-cli link failed${code === null ? '' : ` (exit ${code})`}: ${lastLine(errors) || 'no reason given'}`,
                'Run `nanobot channels login signal` again and scan the new code within a minute or two.',
              ),
            );
        },
        (err: unknown) => reject(err),
      );
    });
  });
}

async function showLink(uri: string, out: (text: string) => void, qr?: (text: string) => void): Promise<void> {
  out('On your phone: Signal → Settings → Linked devices → Link new device, and scan this code:\n\n');
  // The CLI draws the code in the terminal, the WebUI as an image; a caller with neither gets the address.
  if (qr) qr(uri);
  else out(`${uri}\n`);
  out('\nWaiting for the phone…\n');
}

function lastLine(text: string): string {
  return (
    text
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
      .pop() ?? ''
  ).slice(0, 300);
}

/** A command's exit code and output; a missing executable throws the install hint. */
function run(cli: string, args: string[]): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cli, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout = (stdout + chunk).slice(-100_000);
    });
    child.once('error', (err: NodeJS.ErrnoException) => reject(missingBinary(cli, err)));
    child.once('close', (code) => resolve({ code, stdout }));
  });
}
