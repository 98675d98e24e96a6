import { writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HeartbeatService, modelEvaluator } from '../../src/heartbeat/service.js';
import { activeTasks } from '../../src/heartbeat/tasks.js';
import { FakeProvider } from '../helpers/fake-provider.js';

const TEMPLATE = `# Heartbeat Tasks

## Active Tasks

<!-- Add periodic tasks below this line -->

## Completed
`;

async function setup(heartbeat: string, answer: string, evaluatorSays: string) {
  const workspace = await mkdtemp(join(tmpdir(), 'nb-hb-'));
  writeFileSync(join(workspace, 'HEARTBEAT.md'), heartbeat);
  const turns: string[] = [];
  const notified: string[] = [];
  const evaluator = new FakeProvider([{ content: evaluatorSays }]);
  const service = new HeartbeatService({
    workspace,
    intervalS: 1800,
    runTurn: async (prompt) => {
      turns.push(prompt);
      return answer;
    },
    evaluate: modelEvaluator(evaluator, 'm'),
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
});
