/**
 * Pinned shapes of nanobot's client protocol for a turn's tool calls and files, in a running gateway against the
 * fake LLM: a turn with two tool calls (one failing) as `message` rows with `tool_events`, a file the agent sends
 * fetched through its `media_urls` without the token, and an inline `data_url` attachment reaching the model.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerFrame, ToolEventPayload } from '../../../src/channels/websocket/frames.js';
import { startWebUiGateway, type WebUiGateway } from './gateway-helpers.js';
import { connect, type TestClient } from './helpers.js';

/** A 1×1 PNG. */
const PIXEL_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

const open: { run: WebUiGateway; client: TestClient }[] = [];
afterEach(async () => {
  for (const { run, client } of open.splice(0)) {
    await client.close();
    await run.close();
  }
});

async function start(script: Parameters<typeof startWebUiGateway>[0]) {
  const run = await startWebUiGateway(script);
  const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  open.push({ run, client });
  await client.next((f) => f.event === 'ready');
  client.send({ type: 'new_chat' });
  const attached = await client.next((f) => f.event === 'attached');
  return { run, client, chatId: attached.event === 'attached' ? attached.chat_id : '' };
}

async function turnFrames(client: TestClient, chatId: string): Promise<ServerFrame[]> {
  await client.next((f) => f.event === 'turn_end' && f.chat_id === chatId, 10_000);
  return client.frames.filter((f) => 'chat_id' in f && f.chat_id === chatId && f.event !== 'attached');
}

const event = (phase: ToolEventPayload['phase'], call_id: string, path: string, extra: Partial<ToolEventPayload>) => ({
  version: 1,
  phase,
  call_id,
  name: 'read_file',
  arguments: { path },
  result: null,
  error: null,
  files: [],
  embeds: [],
  ...extra,
});

describe('tool calls and files in nanobot’s protocol', () => {
  it('a turn with two tool calls, one failing: hint rows with the starts, progress rows with end and error', async () => {
    const { run, client, chatId } = await start([
      {
        toolCalls: [
          { name: 'read_file', arguments: { path: 'notes.md' } },
          { name: 'read_file', arguments: { path: 'missing.md' } },
        ],
      },
      { text: 'One of them is missing.' },
    ]);
    writeFileSync(join(run.workspace, 'notes.md'), 'hello world\n');
    client.send({ type: 'message', chat_id: chatId, content: 'Read both files' });
    const frames = await turnFrames(client, chatId);

    const rows = frames.filter((f) => f.event === 'message' && f.kind !== undefined);
    const [first, second] = rows.flatMap((f) => (f.event === 'message' ? (f.tool_events ?? []) : []));
    const ok = first?.call_id ?? '';
    const bad = second?.call_id ?? '';
    expect(ok).not.toBe('');
    expect(bad).not.toBe(ok);
    // Starts come before any end (the calls of one round run together); ends may come in either order.
    const starts = rows.filter((f) => f.event === 'message' && f.kind === 'tool_hint');
    const ends = rows.filter((f) => f.event === 'message' && f.kind === 'progress');
    expect(starts).toEqual([
      {
        event: 'message',
        chat_id: chatId,
        text: expect.stringContaining('notes.md'),
        kind: 'tool_hint',
        tool_events: [event('start', ok, 'notes.md', {})],
      },
      {
        event: 'message',
        chat_id: chatId,
        text: expect.stringContaining('missing.md'),
        kind: 'tool_hint',
        tool_events: [event('start', bad, 'missing.md', {})],
      },
    ]);
    expect(ends).toHaveLength(2);
    expect(ends).toEqual(
      expect.arrayContaining([
        {
          event: 'message',
          chat_id: chatId,
          text: '',
          kind: 'progress',
          tool_events: [event('end', ok, 'notes.md', { result: expect.stringContaining('hello world') })],
        },
        {
          event: 'message',
          chat_id: chatId,
          text: '',
          kind: 'progress',
          tool_events: [event('error', bad, 'missing.md', { error: expect.stringMatching(/missing\.md/) })],
        },
      ]),
    );
    // Order within the turn: both starts, then both ends, then the answer, then turn_end (once, at the end).
    const order = frames.map((f) => (f.event === 'message' ? (f.kind ?? 'message') : f.event));
    const lastStart = order.lastIndexOf('tool_hint');
    const firstEnd = order.indexOf('progress');
    expect(lastStart).toBeLessThan(firstEnd);
    expect(order.lastIndexOf('progress')).toBeLessThan(order.indexOf('stream_end'));
    expect(order.filter((kind) => kind === 'turn_end')).toHaveLength(1);
    // Nothing of the turn's activity or answer comes after its end (lifecycle frames such as goal_status may).
    const after = order.slice(order.indexOf('turn_end') + 1);
    for (const kind of ['tool_hint', 'progress', 'delta', 'stream_end', 'message']) expect(after).not.toContain(kind);
    expect(order).not.toContain('tool_start');
    expect(order).not.toContain('tool_end');

    // nanobot's WebUI transcript keeps the activity rows, so a reopened chat shows its tool cards.
    const transcript = readdirSync(join(run.dataDir, 'webui')).find((name) => name.includes(chatId)) ?? '';
    const lines = (await import('node:fs'))
      .readFileSync(join(run.dataDir, 'webui', transcript), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const activity = lines.filter((line) => line.event === 'message' && line.kind !== undefined);
    expect(activity.map((line) => line.kind)).toEqual(['tool_hint', 'tool_hint', 'progress', 'progress']);
    expect(activity.flatMap((line) => line.tool_events as ToolEventPayload[]).map((e) => e.phase)).toEqual(
      expect.arrayContaining(['start', 'start', 'end', 'error']),
    );
  });

  it('edit tools also send file_edit rows: editing, then done with line counts, or error', async () => {
    const { run, client, chatId } = await start([
      { toolCalls: [{ name: 'edit_file', arguments: { path: 'notes.md', old_text: 'hello', new_text: 'hi\nthere' } }] },
      { toolCalls: [{ name: 'edit_file', arguments: { path: 'notes.md', old_text: 'absent', new_text: 'x' } }] },
      { toolCalls: [{ name: 'write_file', arguments: { path: 'new.md', content: 'a\nb\nc\n' } }] },
      { text: 'Edited.' },
    ]);
    writeFileSync(join(run.workspace, 'notes.md'), 'hello world\n');
    client.send({ type: 'message', chat_id: chatId, content: 'Edit the notes' });
    const frames = await turnFrames(client, chatId);
    const edits = frames.flatMap((f) => (f.event === 'file_edit' ? f.edits : []));
    const [first, , second, , third] = edits;
    const row = (call_id: string, tool: string, path: string, extra: Record<string, unknown>) => ({
      version: 1,
      call_id,
      tool,
      path,
      ...extra,
    });
    expect(edits).toEqual([
      row(first?.call_id ?? '', 'edit_file', 'notes.md', {
        phase: 'start',
        added: 0,
        deleted: 0,
        approximate: true,
        status: 'editing',
      }),
      row(first?.call_id ?? '', 'edit_file', 'notes.md', {
        phase: 'end',
        added: 2,
        deleted: 1,
        approximate: false,
        status: 'done',
      }),
      row(second?.call_id ?? '', 'edit_file', 'notes.md', {
        phase: 'start',
        added: 0,
        deleted: 0,
        approximate: true,
        status: 'editing',
      }),
      row(second?.call_id ?? '', 'edit_file', 'notes.md', {
        phase: 'error',
        added: 0,
        deleted: 0,
        approximate: false,
        status: 'error',
        error: expect.stringMatching(/\S/),
      }),
      row(third?.call_id ?? '', 'write_file', 'new.md', {
        phase: 'start',
        added: 0,
        deleted: 0,
        approximate: true,
        status: 'editing',
      }),
      row(third?.call_id ?? '', 'write_file', 'new.md', {
        phase: 'end',
        added: 3,
        deleted: 0,
        approximate: true,
        status: 'done',
      }),
    ]);
    // Each file_edit follows its call's tool_hint row (clients fold the two).
    const order = frames.map((f) => (f.event === 'message' ? (f.kind ?? 'message') : f.event));
    expect(order.indexOf('tool_hint')).toBeLessThan(order.indexOf('file_edit'));
  });

  it('a file the agent sends: media paths and a media_urls entry the client fetches without the token', async () => {
    const { run, client, chatId } = await start([
      { toolCalls: [{ name: 'message', arguments: { content: 'Here is the chart.', media: ['chart.png'] } }] },
      { text: 'Sent.' },
    ]);
    writeFileSync(join(run.workspace, 'chart.png'), PIXEL_PNG);
    client.send({ type: 'message', chat_id: chatId, content: 'Send me the chart' });
    const frames = await turnFrames(client, chatId);
    const sent = frames.find((f) => f.event === 'message' && f.text === 'Here is the chart.');
    expect(sent).toEqual({
      event: 'message',
      chat_id: chatId,
      text: 'Here is the chart.',
      media: [expect.stringMatching(/\/media\/outbound\/.*chart\.png$/)],
      media_urls: [{ url: expect.stringMatching(/^\/api\/media\/[^/]+\/[^/]+$/), name: 'chart.png', kind: 'image' }],
    });
    // The agent's file went through the message tool's copy under the media dir, which is what is served.
    const path = sent?.event === 'message' ? (sent.media?.[0] ?? '') : '';
    expect(path.startsWith(join(run.dataDir, 'media'))).toBe(true);
    // The mid-turn send does not end the turn: turn_end comes once, after the answer.
    const order = frames.map((f) => f.event);
    expect(order.filter((e) => e === 'turn_end')).toHaveLength(1);
    expect(order.indexOf('turn_end')).toBeGreaterThan(frames.indexOf(sent as ServerFrame));

    const url = sent?.event === 'message' ? (sent.media_urls?.[0]?.url ?? '') : '';
    const res = await fetch(`${run.url}${url}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await res.arrayBuffer())).toEqual(PIXEL_PNG);
  });

  it('an inline data_url attachment is saved under media/websocket and reaches the model', async () => {
    const { run, client, chatId } = await start([{ text: 'A red pixel.' }]);
    client.send({
      type: 'message',
      chat_id: chatId,
      content: 'What is this?',
      media: [{ data_url: `data:image/png;base64,${PIXEL_PNG.toString('base64')}`, name: 'pixel.png' }],
    });
    await turnFrames(client, chatId);
    const saved = readdirSync(join(run.dataDir, 'media', 'websocket'));
    expect(saved).toEqual([expect.stringMatching(/pixel\.png$/)]);
    const asked = JSON.stringify(run.fake.requests.at(-1)?.body.messages);
    expect(asked).toMatch(/media\/websocket\/[^"]*pixel\.png/);
    expect(asked).toContain('What is this?');
  });

  it('refuses bad inline attachments as nanobot does (attachment_rejected + reason), writing nothing', async () => {
    const { run, client, chatId } = await start([]);
    const png = `data:image/png;base64,${PIXEL_PNG.toString('base64')}`;
    const cases: [unknown[], string][] = [
      [[{ data_url: 'data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=', name: 'x.svg' }], 'mime'],
      [[{ data_url: 'data:text/html;base64,PGgxPmhpPC9oMT4=', name: 'x.html' }], 'mime'],
      [[{ data_url: 'data:application/x-msdownload;base64,TVo=', name: 'x.exe' }], 'mime'],
      [[{ data_url: 'https://example.com/a.png', name: 'a.png' }], 'decode'],
      [[{ data_url: 'data:image/png,rawbytes', name: 'a.png' }], 'decode'],
      [[{ data_url: 'data:image/png;base64,@@@not base64@@@', name: 'a.png' }], 'decode'],
      [[{ data_url: 'data:image/png;base64,', name: 'a.png' }], 'decode'],
      [Array.from({ length: 5 }, () => ({ data_url: png, name: 'p.png' })), 'too_many_attachments'],
      [
        [
          { data_url: 'data:video/mp4;base64,AAAA', name: 'a.mp4' },
          { data_url: 'data:video/mp4;base64,AAAA', name: 'b.mp4' },
        ],
        'too_many_videos',
      ],
    ];
    for (const [media, reason] of cases) {
      client.send({ type: 'message', chat_id: chatId, content: 'look', media });
      const error = await client.next((f) => f.event === 'error');
      expect(error, reason).toMatchObject({ event: 'error', chat_id: chatId, detail: 'attachment_rejected', reason });
      expect(error.event === 'error' && error.hint).toBeTruthy();
    }
    // A malformed item (not an object with data_url) is an envelope error.
    client.send({ type: 'message', chat_id: chatId, content: 'look', media: [{ name: 'no-data.png' }] });
    expect(await client.next((f) => f.event === 'error')).toMatchObject({ event: 'error' });
    expect(existsSync(join(run.dataDir, 'media', 'websocket'))).toBe(false);
    expect(run.fake.requests).toHaveLength(0);
  });

  it('caps an inline file at maxMediaMb, checked before decoding', async () => {
    const run = await startWebUiGateway([], { maxMediaMb: 0.001, maxMessageBytes: 65_536 });
    const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
    open.push({ run, client });
    await client.next((f) => f.event === 'ready');
    const big = Buffer.alloc(4096, 1).toString('base64');
    client.send({
      type: 'message',
      chat_id: 'c-big',
      content: 'x',
      media: [{ data_url: `data:image/png;base64,${big}` }],
    });
    expect(await client.next((f) => f.event === 'error')).toMatchObject({
      detail: 'attachment_rejected',
      reason: 'size',
    });
    expect(existsSync(join(run.dataDir, 'media', 'websocket'))).toBe(false);
  });
});
