import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HeartbeatService, modelEvaluator } from '../../src/heartbeat/service.js';
import { activeTasks } from '../../src/heartbeat/tasks.js';
import { call, FakeProvider, type Scripted } from '../helpers/fake-provider.js';

const TEMPLATE = `# Heartbeat Tasks

## Active Tasks

<!-- Add periodic tasks below this line -->

## Completed
`;

/** The gate answers through nanobot's evaluate_notification tool; 'yes'/'no' script that call. */
function verdict(says: string | Scripted): Scripted {
  if (says === 'yes' || says === 'no')
    return { toolCalls: [call('evaluate_notification', { should_notify: says === 'yes', reason: 'test' })] };
  return typeof says === 'string' ? { content: says } : says;
}

async function setup(heartbeat: string, answer: string, evaluatorSays: string | Scripted, evaluatorMd?: string) {
  const workspace = await mkdtemp(join(tmpdir(), 'nb-hb-'));
  if (evaluatorMd !== undefined) {
    mkdirSync(join(workspace, 'prompts'), { recursive: true });
    writeFileSync(join(workspace, 'prompts', 'evaluator.md'), evaluatorMd);
  }
  writeFileSync(join(workspace, 'HEARTBEAT.md'), heartbeat);
  const turns: string[] = [];
  const notified: string[] = [];
  const evaluator = new FakeProvider([verdict(evaluatorSays)]);
  const service = new HeartbeatService({
    workspace,
    intervalS: 1800,
    runTurn: async (prompt) => {
      turns.push(prompt);
      return answer;
    },
    evaluate: modelEvaluator(evaluator, 'm', workspace),
    notify: async (text) => void notified.push(text),
  });
  return { service, turns, notified, evaluator };
}

describe('heartbeat', () => {
  it('reads only the tasks under Active Tasks', () => {
    expect(activeTasks(TEMPLATE)).toEqual([]);
    expect(
      activeTasks(
        `${TEMPLATE.replace('<!-- Add periodic tasks below this line -->', '- Check the weather\n- [x] done already')}`,
      ),
    ).toEqual(['Check the weather']);
  });

  it('makes no LLM call when there are no active tasks', async () => {
    const { service, turns, evaluator } = await setup(TEMPLATE, 'x', 'yes');
    expect(await service.tick()).toEqual({ ran: false, notified: false, tasks: 0 });
    expect(turns).toHaveLength(0);
    expect(evaluator.requests).toHaveLength(0);
  });

  it('runs one turn for active tasks and sends nothing when the evaluator says no', async () => {
    const tasks = TEMPLATE.replace('<!-- Add periodic tasks below this line -->', '- Check the build status');
    const { service, turns, notified } = await setup(tasks, 'The build is still green.', 'no');
    expect(await service.tick()).toMatchObject({ ran: true, notified: false });
    expect(turns).toHaveLength(1);
    expect(turns[0]).toContain('- Check the build status');
    expect(notified).toEqual([]);
  });

  it('notifies when the evaluator says yes', async () => {
    const tasks = TEMPLATE.replace('<!-- Add periodic tasks below this line -->', '- Watch the disk');
    const { service, notified } = await setup(tasks, 'Disk is 95% full.', 'yes');
    await service.tick();
    expect(notified).toEqual(['Disk is 95% full.']);
  });

  it('never sends "nothing to report", and asks no evaluator then', async () => {
    const tasks = TEMPLATE.replace('<!-- Add periodic tasks below this line -->', '- Watch the disk');
    const { service, notified, evaluator } = await setup(tasks, 'Nothing to report.', 'yes');
    await service.tick();
    expect(notified).toEqual([]);
    expect(evaluator.requests).toHaveLength(0);
  });

  it('fails closed when the evaluator errors', async () => {
    const tasks = TEMPLATE.replace('<!-- Add periodic tasks below this line -->', '- Watch the disk');
    const { service, notified } = await setup(tasks, 'Disk is 95% full.', '');
    await service.tick();
    expect(notified).toEqual([]);
  });

  it.each([
    ['plain text "yes" (no tool call)', { content: 'yes' }],
    ['a provider error', { finishReason: 'error' as const, content: '' }],
    ['should_notify as a string', { toolCalls: [call('evaluate_notification', { should_notify: 'true' })] }],
    ['broken arguments', { toolCalls: [call('evaluate_notification', '{not json')] }],
    ['another tool', { toolCalls: [call('notify_user', { should_notify: true })] }],
  ])('fails closed on %s', async (_name, says) => {
    const tasks = TEMPLATE.replace('<!-- Add periodic tasks below this line -->', '- Watch the disk');
    const { service, notified } = await setup(tasks, 'Disk is 95% full.', says);
    await service.tick();
    expect(notified).toEqual([]);
  });

  it("honours the workspace's prompts/evaluator.md (nanobot's override) as the gate's system prompt", async () => {
    const tasks = TEMPLATE.replace('<!-- Add periodic tasks below this line -->', '- Watch the disk');
    const custom = 'Only notify about disks. Call evaluate_notification.';
    const { service, evaluator, notified } = await setup(tasks, 'Disk is 95% full.', 'yes', `${custom}\n\n`);
    await service.tick();
    expect(notified).toEqual(['Disk is 95% full.']);
    const request = evaluator.requests[0];
    expect(request?.messages[0]).toEqual({ role: 'system', content: custom });
    expect(request?.tools?.map((t) => t.function.name)).toEqual(['evaluate_notification']);
    expect(JSON.stringify(request?.messages[1])).toContain('Disk is 95% full.');
  });

  it('uses the built-in gate prompt when prompts/evaluator.md is empty', async () => {
    const tasks = TEMPLATE.replace('<!-- Add periodic tasks below this line -->', '- Watch the disk');
    const { service, evaluator } = await setup(tasks, 'Disk is 95% full.', 'no', '  \n');
    await service.tick();
    expect(String(evaluator.requests[0]?.messages[0]?.content)).toContain('evaluate_notification');
    expect(String(evaluator.requests[0]?.messages[0]?.content)).toContain('notification gate');
  });
});
