/**
 * A stand-in for the `signal-cli` executable (tests put a `signal-cli` wrapper that runs this on PATH):
 *
 *   signal-cli -a <number> daemon --http <host:port> …   listens on host:port and passes every connection through to
 *                                                         the in-process fake daemon at $FAKE_SIGNAL_UPSTREAM
 *                                                         (host:port); SIGTERM stops it
 *   signal-cli link -n <name>                            prints an sgnl://linkdevice address, then "Associated with:
 *                                                         $FAKE_SIGNAL_LINK_NUMBER" (or times out, as signal-cli does)
 *   signal-cli -o json listAccounts                      prints $FAKE_SIGNAL_ACCOUNTS (a JSON list of {number})
 *
 * Every run appends its arguments as one JSON line to $FAKE_SIGNAL_LOG. $FAKE_SIGNAL_MODE picks failures:
 * `daemon-dies` (exits at once, as with an unregistered account), `link-timeout`.
 */
import { appendFileSync } from 'node:fs';
import net from 'node:net';

const args = process.argv.slice(2);
const env = process.env;
if (env.FAKE_SIGNAL_LOG) appendFileSync(env.FAKE_SIGNAL_LOG, `${JSON.stringify({ pid: process.pid, args })}\n`);
const mode = env.FAKE_SIGNAL_MODE ?? '';
const command = args.find((arg) => ['daemon', 'link', 'listAccounts'].includes(arg));

if (command === 'listAccounts') {
  process.stdout.write(`${env.FAKE_SIGNAL_ACCOUNTS ?? '[]'}\n`);
} else if (command === 'link') {
  process.stdout.write('sgnl://linkdevice?uuid=Zm9vYmFy&pub_key=QmFzZTY0S2V5\n');
  setTimeout(() => {
    if (mode === 'link-timeout') {
      process.stderr.write('Link request timed out, please try again.\n');
      process.exit(3);
    }
    process.stdout.write(`Associated with: ${env.FAKE_SIGNAL_LINK_NUMBER ?? '+15550000000'}\n`);
  }, 200);
} else if (command === 'daemon') {
  const account = args[args.indexOf('-a') + 1];
  if (mode === 'daemon-dies') {
    process.stderr.write(`ERROR App - User ${account} is not registered.\n`);
    process.exit(1);
  }
  const address = args[args.indexOf('--http') + 1] ?? 'localhost:8080';
  const colon = address.lastIndexOf(':');
  const [upstreamHost, upstreamPort] = (env.FAKE_SIGNAL_UPSTREAM ?? '').split(':');
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(upstreamPort), upstreamHost);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  server.listen(Number(address.slice(colon + 1)), address.slice(0, colon), () => {
    process.stderr.write(`INFO  HttpServerHandler - Started HTTP server on /${address}\n`);
  });
  process.on('SIGTERM', () => {
    for (const socket of sockets) socket.destroy();
    server.close(() => process.exit(0));
  });
} else {
  process.stderr.write(`fake signal-cli: unknown command ${args.join(' ')}\n`);
  process.exit(2);
}
