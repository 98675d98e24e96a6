import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MessageBus } from '../../src/bus/message-bus.js';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createMessageTool, type MessageTargetCheck } from '../../src/tools/message.js';
import { makeContext, makeTempDir, textOf } from './helpers.js';

function setup(maxPerMinute = 6, allowTarget?: MessageTargetCheck) {
  const workspace = makeTempDir();
  const bus = new MessageBus();
  const mediaDir = path.join(makeTempDir(), 'media', 'outbound');
  let clock = 0;
  const tool = createMessageTool({
    send: (m) => bus.publishOutbound(m),
    policy: createPathPolicy({ workspace, restrictToWorkspace: true }),
    mediaDir,
    maxPerMinute,
    now: () => clock,
    ...(allowTarget ? { allowTarget } : {}),
  });
  const ctx = makeContext({ channel: 'telegram', chatId: '42', sessionKey: 'telegram:42' });
  return { workspace, bus, tool, ctx, mediaDir, advance: (ms: number) => (clock += ms) };
}

describe('message tool', () => {
  it('sends to the current chat by default', async () => {
    const { bus, tool, ctx } = setup();
    const result = await tool.execute({ content: 'Halfway done' }, ctx);
    expect(textOf(result)).toBe('Message sent to telegram:42.');
    expect(await bus.consumeOutbound()).toEqual({ channel: 'telegram', chatId: '42', content: 'Halfway done' });
  });

  it('sends to another channel with attachments and buttons when the surface admits that chat', async () => {
    const { bus, tool, ctx, workspace, mediaDir } = setup(6, (channel, chatId) =>
      channel === 'email' && chatId === 'me@x.org' ? { ok: true } : { ok: false, why: 'not admitted' },
    );
    fs.writeFileSync(path.join(workspace, 'report.pdf'), 'pdf');
    await tool.execute(
      { content: 'Report', channel: 'email', chat_id: 'me@x.org', media: ['report.pdf'], buttons: [['OK']] },
      ctx,
    );
    const sent = await bus.consumeOutbound();
    expect(sent).toMatchObject({ channel: 'email', chatId: 'me@x.org', content: 'Report', buttons: [['OK']] });
    // The channel gets a private copy outside the workspace, under the file's own name.
    const [copy = ''] = sent.media ?? [];
    expect(copy.startsWith(path.join(mediaDir, ''))).toBe(true);
    expect(path.basename(copy)).toBe('report.pdf');
    expect(fs.readFileSync(copy, 'utf8')).toBe('pdf');
    expect(fs.statSync(copy).mode & 0o777).toBe(0o600);
    // Changing the workspace file afterwards does not change what the channel sends.
    fs.writeFileSync(path.join(workspace, 'report.pdf'), 'changed');
    expect(fs.readFileSync(copy, 'utf8')).toBe('pdf');
  });

  it('refuses another chat the surface does not admit, or any other chat when the surface gives no check', async () => {
    const admitting = setup(6, () => ({ ok: false, why: 'nobody allowed wrote from it' }));
    const refused = await admitting.tool.execute({ content: 'x', chat_id: '43' }, admitting.ctx);
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/Not sent to telegram:43: nobody allowed wrote from it/);
    const bare = setup();
    const other = await bare.tool.execute({ content: 'x', channel: 'discord', chat_id: '42' }, bare.ctx);
    expect(textOf(other)).toMatch(/only the current chat/);
    expect(
      (await bare.tool.execute({ content: 'x', chat_id: '42', channel: 'telegram' }, bare.ctx)).isError,
    ).toBeFalsy();
  });

  it('refuses attachments outside the workspace or missing', async () => {
    const { tool, ctx, workspace } = setup();
    expect((await tool.execute({ content: 'x', media: ['/etc/passwd'] }, ctx)).isError).toBe(true);
    expect(textOf(await tool.execute({ content: 'x', media: ['nope.txt'] }, ctx))).toMatch(/not found/);
    fs.mkdirSync(path.join(workspace, 'folder'));
    expect(textOf(await tool.execute({ content: 'x', media: ['folder'] }, ctx))).toMatch(/not found.*a file/);
    fs.symlinkSync('/etc/hostname', path.join(workspace, 'link-out'));
    expect(textOf(await tool.execute({ content: 'x', media: ['link-out'] }, ctx))).toMatch(/outside the workspace/);
  });

  it('limits messages per session per minute', async () => {
    const { tool, ctx, advance } = setup(2);
    await tool.execute({ content: '1' }, ctx);
    await tool.execute({ content: '2' }, ctx);
    const third = await tool.execute({ content: '3' }, ctx);
    expect(third.isError).toBe(true);
    expect(textOf(third)).toMatch(/at most 2 messages per minute/);
    advance(61_000);
    expect((await tool.execute({ content: '4' }, ctx)).isError).toBeFalsy();
  });

  it('needs a target when there is no current chat', async () => {
    const { tool } = setup();
    const result = await tool.execute({ content: 'x' }, makeContext());
    expect(textOf(result)).toMatch(/No target/);
  });
});
