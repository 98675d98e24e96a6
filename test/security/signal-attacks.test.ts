/**
 * Attacks on the Signal channel: a daemon address off this machine (signal-cli's HTTP daemon has no authentication),
 * attachment ids that try to leave signal-cli's attachments directory (`..`, absolute paths, symlinks, FIFOs),
 * oversized media, look-alike senders (a profile name, a number that merely contains an allowed one), hostile or
 * broken event streams, style marks smuggled into replies, and message contents kept out of the log.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { signalChannel } from '../../src/channels/signal/index.js';
import { styledText } from '../../src/channels/signal/styles.js';
import { createLogger } from '../../src/util/log.js';
import { eventually } from '../channels/contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../channels/gateway-harness.js';
import { BOT, type FakeSignalCli, person, startFakeSignalCli } from '../channels/signal/fake-signal-cli.js';
import {
  OWNER,
  type SignalGateway,
  STRANGER,
  signalSettings,
  startSignalGateway,
  waitState,
} from '../channels/signal/helpers.js';
import { startFakeLLM } from '../helpers/fake-llm.js';

const open: SignalGateway[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});

async function start(settings: Record<string, unknown> = {}, signal?: FakeSignalCli) {
  const run = await startSignalGateway(settings, signal);
  open.push(run);
  await waitState(run.gateway, 'running');
  return run;
}

const lastUserText = (run: SignalGateway) =>
  JSON.stringify((run.llm.requests.at(-1)?.body.messages as unknown[] | undefined)?.at(-1));
const quiet = () => new Promise((resolve) => setTimeout(resolve, 400));

/** A data message from `from` with these attachment entries, as a hostile sender's client (or daemon) could write. */
function withAttachments(from: { number?: string; uuid: string }, attachments: unknown[], text = 'see attached') {
  const timestamp = Date.now() + Math.floor(Math.random() * 1000);
  return {
    envelope: {
      sourceNumber: from.number,
      sourceUuid: from.uuid,
      timestamp,
      dataMessage: { timestamp, message: text, attachments },
    },
    account: BOT.number,
  };
}

describe('signal daemonHost: only this machine (the daemon has no authentication)', () => {
  const block = (daemonHost: string) => ({ enabled: true, phoneNumber: '+4915112345678', daemonHost });
  it.each([
    '192.168.1.5',
    '10.0.0.1',
    '0.0.0.0',
    'signal.example.com',
    'localhost.example.com',
    '127.0.0.1.nip.io',
    '::ffff:10.0.0.1',
    'localhost:8080',
    'http://localhost',
    ' 127.0.0.1 x',
  ])('refuses %s', (host) => {
    expect(() => signalChannel.parse(block(host))).toThrow(/channels\.signal\.daemonHost must be this machine/);
  });
  it.each(['localhost', '127.0.0.1', '127.0.0.2', '::1'])('accepts %s', (host) => {
    expect(() => signalChannel.parse(block(host))).not.toThrow();
  });
});

describe('signal attachments: read from signal-cli’s attachments directory and nowhere else', () => {
  it.each(['../../../../etc/passwd', '/etc/passwd', '..', 'sub/../../secret', '..%2Fsecret', 'a\u0000b'])(
    'refuses the attachment id %j, and the message still reaches the agent',
    async (id) => {
      const run = await start();
      run.llm.enqueue({ text: 'ok' });
      run.signal.push(withAttachments(OWNER, [{ id, contentType: 'text/plain', filename: 'x.txt', size: 10 }]));
      await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['ok']));
      const sent = lastUserText(run);
      expect(sent).toContain('see attached');
      expect(sent).toContain('not received');
      expect(sent).not.toContain('root:');
      expect(readdirSync(join(run.dataDir, 'media', 'signal'), { recursive: true }).length).toBe(0);
    },
  );

  it('refuses a symlink planted in the attachments directory that points at a file outside it', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'signal-secret-'));
    writeFileSync(join(outside, 'id_rsa'), 'PRIVATE KEY MATERIAL');
    const signal = await startFakeSignalCli({ keepAliveMs: 200 });
    symlinkSync(join(outside, 'id_rsa'), join(signal.attachmentsDir, 'planted.txt'));
    const run = await start({}, signal);
    run.llm.enqueue({ text: 'ok' });
    signal.push(withAttachments(OWNER, [{ id: 'planted.txt', contentType: 'text/plain', filename: 'planted.txt' }]));
    await eventually(() => expect(signal.messagesTo(OWNER)).toEqual(['ok']));
    expect(lastUserText(run)).toContain('symbolic link: refused');
    expect(lastUserText(run)).not.toContain('PRIVATE KEY');
  });

  it('refuses a FIFO without hanging the chat', async () => {
    const signal = await startFakeSignalCli({ keepAliveMs: 200 });
    execFileSync('mkfifo', [join(signal.attachmentsDir, 'pipe.bin')]);
    const run = await start({}, signal);
    run.llm.enqueue({ text: 'first' }, { text: 'second' });
    signal.push(withAttachments(OWNER, [{ id: 'pipe.bin', contentType: 'application/octet-stream' }]));
    signal.userSays({ from: OWNER, text: 'next message' });
    await eventually(() => expect(signal.messagesTo(OWNER)).toEqual(['first', 'second']));
    expect(JSON.stringify(run.llm.requests[0]?.body.messages)).toContain('not a regular file');
  });

  it('a sender-chosen file name cannot escape the media folder', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'saved' });
    run.signal.userSays({
      from: OWNER,
      text: 'file',
      attachments: [{ filename: '../../../.bashrc', contentType: 'text/plain', content: Buffer.from('echo pwned') }],
    });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['saved']));
    const files = readdirSync(join(run.dataDir, 'media', 'signal'));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^\d+-[0-9a-f]+-bashrc$/);
  });

  it('refuses media over maxMediaMb: declared too large, or larger than declared', async () => {
    const run = await start({ maxMediaMb: 0.001 });
    run.llm.enqueue({ text: 'too big' }, { text: 'still too big' });
    run.signal.userSays({
      from: OWNER,
      text: 'honest',
      attachments: [{ filename: 'big.bin', contentType: 'application/octet-stream', content: Buffer.alloc(5000) }],
    });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['too big']));
    expect(lastUserText(run)).toContain('too large');
    writeFileSync(join(run.signal.attachmentsDir, 'liar.bin'), Buffer.alloc(5000));
    run.signal.push(withAttachments(OWNER, [{ id: 'liar.bin', contentType: 'application/octet-stream', size: 10 }]));
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['too big', 'still too big']));
    expect(lastUserText(run)).toContain('too large');
    expect(readdirSync(join(run.dataDir, 'media', 'signal'))).toEqual([]);
  });
});

describe('signal senders: admitted by their Signal identity only', () => {
  it('a profile name or a number that contains an allowed one does not admit a stranger', async () => {
    const lookAlike = person(15550001, { number: `${OWNER.number}1`, name: OWNER.number });
    const named = person(1004, { name: '@owner', username: 'mallory' });
    const run = await start({ allowFrom: [OWNER.number, '@owner'] });
    run.signal.userSays({ from: lookAlike, text: 'I am the owner' });
    run.signal.userSays({ from: named, text: 'me too' });
    await eventually(() => {
      expect(run.signal.messagesTo(lookAlike).join('\n')).toMatch(/pairing code/i);
      expect(run.signal.messagesTo(named).join('\n')).toMatch(/pairing code/i);
    });
    await quiet();
    expect(run.llm.requests).toHaveLength(0);
  });

  it('a stranger cannot run /pairing, and a mention of the bot in a group from a stranger gets no turn', async () => {
    const signal = await startFakeSignalCli({ keepAliveMs: 200 });
    const team = signal.addGroup('Team', [OWNER, STRANGER]);
    const run = await start({ group: { enabled: true, allowFrom: [team] } }, signal);
    signal.userSays({ from: STRANGER, text: '/pairing approve ABCD-EFGH' });
    signal.userSays({
      from: STRANGER,
      groupId: team,
      text: '\uFFFC do it',
      mentions: [{ person: BOT, start: 0, length: 1 }],
    });
    await eventually(() => expect(signal.messagesTo(STRANGER).join('\n')).toMatch(/pairing code/i));
    await quiet();
    expect(run.llm.requests).toHaveLength(0);
    expect(signal.messagesTo(team)).toEqual([]);
  });
});

describe('signal event stream: a hostile or broken daemon', () => {
  it('survives junk events (not JSON, not objects, wrong types, wild mention ranges) and answers the real one', async () => {
    const run = await start();
    run.signal.pushRaw('event:receive\ndata:{not json\n\n');
    run.signal.pushRaw('event:receive\ndata:[1,2,3]\n\n');
    run.signal.pushRaw('event:receive\ndata:"a string"\n\n');
    run.signal.pushRaw('event:other\ndata:{}\n\n');
    run.signal.push({ envelope: { sourceNumber: 42, timestamp: 'soon', dataMessage: 'hello' } });
    run.signal.push({
      envelope: { sourceUuid: 'not-a-uuid', timestamp: 1, dataMessage: { timestamp: 1, message: 'x' } },
    });
    const timestamp = Date.now();
    run.signal.push({
      envelope: {
        sourceNumber: OWNER.number,
        sourceUuid: OWNER.uuid,
        timestamp,
        dataMessage: {
          timestamp,
          message: '\uFFFC still fine',
          mentions: [
            { uuid: BOT.uuid, start: 0, length: 1 },
            { uuid: BOT.uuid, start: 5, length: 10_000 },
            { uuid: BOT.uuid, start: -3, length: 2 },
            { start: 'x' },
            null,
          ],
          attachments: [null, 7, { id: 5 }],
          groupInfo: null,
        },
      },
    });
    run.llm.enqueue({ text: 'fine' });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['fine']));
    expect(lastUserText(run)).toContain('still fine');
    expect((await healthOf(run.gateway)).channels.signal).toBe('running');
  });

  it('an endless event (over 4 MB) is cut off and the channel reconnects', async () => {
    const run = await start();
    expect(run.signal.streamsOpened()).toBe(1);
    run.signal.pushRaw(`event:receive\ndata:${'x'.repeat(5 * 1024 * 1024)}`);
    await eventually(() => expect(run.signal.streamsOpened()).toBe(2), 10_000);
    await waitState(run.gateway, 'running');
    run.llm.enqueue({ text: 'still here' });
    run.signal.userSays({ from: OWNER, text: 'hello?' });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['still here']), 10_000);
  });
});

describe('signal replies', () => {
  it('style marks in the model’s text are removed, never turned into ranges', () => {
    const plain = 'a\uE000b\uE001c **d**';
    const { text, styles } = styledText(plain, 'abc d');
    expect(text).toBe('abc d');
    expect(styles).toEqual(['4:1:BOLD']);
  });

  it('a file name with ; , = and % arrives intact in the data URI', async () => {
    const run = await start();
    const name = 'a;b,c=d%20e.txt';
    writeFileSync(join(run.workspace, name), 'content');
    run.llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'file', media: [name] } }] },
      { text: 'done' },
    );
    run.signal.userSays({ from: OWNER, text: 'send it' });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toContain('done'));
    const upload = run.signal.sentTo(OWNER).find((m) => m.attachments.length > 0);
    expect(upload?.attachments[0]?.data.toString()).toBe('content');
    expect(upload?.attachments[0]?.filename).toMatch(/\.txt$/);
  });
});

describe('signal logs', () => {
  it('keep what people write out of the info log', async () => {
    const signal = await startFakeSignalCli({ keepAliveMs: 200 });
    signal.addPerson(OWNER);
    const llm = await startFakeLLM();
    const lines: string[] = [];
    const files = await writeChannelConfig('signal', llm, { ...signalSettings(signal), allowFrom: [OWNER.number] });
    const gateway = await startChannelGateway(files, { log: createLogger('info', (line) => lines.push(line)) });
    try {
      await eventually(async () => expect((await healthOf(gateway)).channels.signal).toBe('running'));
      llm.enqueue({ text: 'THE SECRET ANSWER' });
      signal.userSays({ from: OWNER, text: 'my bank PIN is 4711' });
      await eventually(() => expect(signal.messagesTo(OWNER)).toEqual(['THE SECRET ANSWER']));
      expect(lines.join('\n')).not.toContain('4711');
      expect(lines.join('\n')).not.toContain('SECRET ANSWER');
    } finally {
      await gateway.shutdown('test end');
      await signal.close();
      await llm.close();
    }
  });
});
