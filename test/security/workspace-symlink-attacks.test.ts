/**
 * The built CLI against a hostile model that plants links with `exec`: every workspace path nanobot itself reads or
 * writes (bootstrap files, memory, history + cursors, prompts, cron store, tool-result spill, skills, triggers) is
 * replaced by a link to a host file or directory outside the workspace. The next turns and processes must not put a
 * byte of those files into a request, must not create, change, truncate or delete anything outside, and must keep
 * working with a warning. Works with or without bubblewrap: the links are planted through the exec tool either way.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, type FakeScriptStep, startFakeLLM } from '../helpers/fake-llm.js';

const BIN = path.join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');
const API_KEY = 'sk-CANARY-APIKEY-7f3a9c';
const SECRET = 'CANARY-SECRET-5e2d1b';
const OLD = new Date(Date.now() - 30 * 24 * 3600 * 1000);

let fake: FakeLLM | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await fake?.close();
  fake = undefined;
});

/** Every entry under `dir` with its type, mode, size, mtime and content: any change outside shows up here. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const name of fs.readdirSync(d).sort()) {
      const p = path.join(d, name);
      const s = fs.lstatSync(p);
      if (s.isDirectory()) {
        out[p] = `dir ${s.mode}`;
        walk(p);
      } else {
        const body = s.isSymbolicLink()
          ? fs.readlinkSync(p)
          : createHash('sha256').update(fs.readFileSync(p)).digest('hex');
        out[p] = `${s.mode} ${s.size} ${s.mtimeMs} ${body}`;
      }
    }
  };
  walk(dir);
  return out;
}

interface Setup {
  home: string;
  ws: string;
  canary: string;
  nanobotHome: string;
}

/** A home with a canary tree outside the workspace: secret files, victim files and directories with old files. */
async function setup(script: FakeScriptStep[]): Promise<Setup> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  fake = await startFakeLLM(script);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.agents.defaults.maxToolResultChars = 600;
    c.providers.custom = { apiKey: API_KEY, apiBase: `${fake?.url}/v1` };
  });
  const canary = path.join(home, 'canary');
  fs.mkdirSync(path.join(canary, 'dir'), { recursive: true });
  fs.mkdirSync(path.join(canary, 'skill'), { recursive: true });
  fs.writeFileSync(path.join(canary, 'secret.txt'), `${SECRET} id_rsa\n`);
  fs.writeFileSync(path.join(canary, 'victim.txt'), 'victim stays as it is\n');
  fs.writeFileSync(path.join(canary, 'cursor'), '7\n');
  fs.writeFileSync(path.join(canary, 'skill', 'SKILL.md'), `---\nname: evil\ndescription: ${SECRET}\n---\n${SECRET}\n`);
  fs.writeFileSync(path.join(canary, 'dir', 'old.txt'), 'an old file the prune must not delete');
  fs.writeFileSync(
    path.join(canary, 'dir', 'trigger.json'),
    JSON.stringify({ name: 'evil', message: `run ${SECRET}`, createdAt: OLD.toISOString() }),
  );
  fs.writeFileSync(path.join(canary, 'dir', 'broken.json'), '{not json');
  for (const f of ['old.txt', 'trigger.json', 'broken.json']) fs.utimesSync(path.join(canary, 'dir', f), OLD, OLD);
  return { home, ws: path.join(home, '.nanobot', 'workspace'), canary, nanobotHome: path.join(home, '.nanobot') };
}

const exec = (command: string) => ({ toolCalls: [{ name: 'exec', arguments: { command } }] });
/** The exec guard reads command text, so the plant runs from a script the model wrote first (as an attacker would). */
const plantSteps = (script: string) => [
  { toolCalls: [{ name: 'write_file', arguments: { path: 'plant.sh', content: `${script}\n` } }] },
  exec('sh plant.sh'),
];

function plantCommand(s: Setup): string {
  const config = path.join(s.nanobotHome, 'config.json');
  const secret = path.join(s.canary, 'secret.txt');
  return [
    'mkdir -p memory prompts skills .nanobot',
    `ln -sfn ${config} SOUL.md`,
    `ln -sfn ${secret} AGENTS.md`,
    // relative, climbing out of the workspace
    `ln -sfn ../../canary/secret.txt USER.md`,
    `ln -sfn ${config} memory/MEMORY.md`,
    `ln -sfn ${secret} prompts/dream.md`,
    `ln -sfn ${secret} TOOLS.md`,
    `ln -sfn ${secret} HEARTBEAT.md`,
    `ln -sfn ${path.join(s.canary, 'victim.txt')} memory/history.jsonl`,
    `ln -sfn ${path.join(s.canary, 'cursor')} memory/.cursor`,
    `ln -sfn ${path.join(s.canary, 'cursor')} memory/.dream_cursor`,
    `ln -sfn ${path.join(s.canary, 'skill')} skills/evil`,
    `rm -rf cron .nanobot/tool-results triggers`,
    `ln -sfn ${path.join(s.canary, 'dir')} cron`,
    `ln -sfn ${path.join(s.canary, 'dir')} .nanobot/tool-results`,
    'echo planted',
  ].join(' && ');
}

function requestsText(): string {
  return JSON.stringify(fake?.requests.map((r) => r.body) ?? []);
}

describe('links planted by exec never lead nanobot outside the workspace (built CLI)', () => {
  it('agent -m: prompts, memory, history, cron, spill and skills stay inside; nanobot keeps working', async () => {
    const s = await setup([]);
    fake?.enqueue(...plantSteps(plantCommand(s)), exec('seq 1 2000'), {
      toolCalls: [{ name: 'cron', arguments: { action: 'add', message: 'ping', every_seconds: 3600 } }],
    });
    fake?.enqueue({ text: 'planted.' });
    const before = snapshot(s.canary);

    const first = await runCli(['agent', '-m', 'plant'], s.home);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('planted.');

    fake?.enqueue({ text: 'second turn fine.' });
    const second = await runCli(['agent', '-m', 'hello again'], s.home);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('second turn fine.');

    // A small context window makes the third turn consolidate: a summary call, then an append to
    // memory/history.jsonl and a write of memory/.cursor (both links out).
    editConfig(s.home, (c) => {
      c.agents.defaults.maxTokens = 1000;
      c.agents.defaults.contextWindowTokens = 3600;
    });
    const config = fs.readFileSync(path.join(s.nanobotHome, 'config.json'), 'utf8');
    const requestsBeforeThird = fake?.requests.length ?? 0;
    fake?.enqueue({ text: 'third fine.' }, { text: 'third fine.' }, { text: 'third fine.' }, { text: 'third fine.' });
    const third = await runCli(['agent', '-m', 'third message'], s.home);
    expect(third.code).toBe(0);
    expect(third.stdout).toContain('third fine.');
    // The consolidation ran (its summary request was sent) and its append was refused with a warning.
    expect(fake?.requests.length).toBeGreaterThan(requestsBeforeThird + 1);

    expect(fake?.requests.length).toBeGreaterThanOrEqual(5);
    const sent = requestsText();
    expect.soft(sent).not.toContain(API_KEY);
    expect.soft(sent).not.toContain(SECRET);
    expect.soft(snapshot(s.canary)).toEqual(before);
    expect.soft(fs.readFileSync(path.join(s.nanobotHome, 'config.json'), 'utf8')).toBe(config);
    expect.soft(second.stderr).toMatch(/SOUL\.md: it resolves to .*outside the workspace; left out of the prompt/);
    expect.soft(third.stderr).toMatch(/consolidation of cli:direct failed: refusing .*history\.jsonl/);
    expect(`${first.stderr}${second.stderr}${third.stderr}`).not.toMatch(/TypeError|at .*\.js:\d+/);
  }, 60_000);

  it('gateway: a triggers/ link out is never run, renamed or deleted', async () => {
    const s = await setup([]);
    fake?.enqueue(...plantSteps(`rm -rf triggers && ln -sfn ${path.join(s.canary, 'dir')} triggers && echo planted`), {
      text: 'planted.',
    });
    expect((await runCli(['agent', '-m', 'plant'], s.home)).code).toBe(0);
    const before = snapshot(s.canary);
    const requestsBefore = fake?.requests.length ?? 0;

    const child = spawn(process.execPath, [BIN, 'gateway', '--port', '0', '--verbose'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: s.home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdout?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const end = Date.now() + 20_000;
    // Fixed: a warning naming triggers; broken: the canary trigger reaches the model (or the canary changes).
    while (!/triggers.*outside the workspace/s.test(stderr) && (fake?.requests.length ?? 0) === requestsBefore) {
      if (Date.now() > end) throw new Error(`gateway gave no sign within 20 s:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill('SIGTERM');
    await new Promise((r) => child.on('exit', r));
    expect.soft(requestsText()).not.toContain(SECRET);
    expect.soft(snapshot(s.canary)).toEqual(before);
  }, 60_000);

  it('/dream: linked memory files and prompt are never read; a .git link out is never written', async () => {
    const s = await setup([]);
    fs.mkdirSync(path.join(s.canary, 'gitdir'));
    fs.writeFileSync(path.join(s.canary, 'gitdir', 'HEAD'), 'ref: refs/heads/main\n');
    const line = (cursor: number, content: string) =>
      `printf '%s\\n' '${JSON.stringify({ cursor, timestamp: '2026-01-01 00:00', content })}' >> memory/history.jsonl`;
    const plant = [
      'mkdir -p memory prompts',
      line(1, 'the user likes green tea'),
      `ln -sfn ${path.join(s.nanobotHome, 'config.json')} SOUL.md`,
      `ln -sfn ${path.join(s.canary, 'secret.txt')} memory/MEMORY.md`,
      `ln -sfn ../../../canary/secret.txt prompts/dream.md`,
      'echo planted',
    ].join(' && ');
    fake?.enqueue(...plantSteps(plant), { text: 'planted.' });
    expect((await runCli(['agent', '-m', 'plant'], s.home)).code).toBe(0);
    const before = snapshot(s.canary);
    const config = fs.readFileSync(path.join(s.nanobotHome, 'config.json'), 'utf8');

    // Dream runs: its prompt and input are built from the workspace files, then it commits to the memory repo.
    const requestsBefore = fake?.requests.length ?? 0;
    fake?.enqueue({ text: 'Noted the tea.' });
    const first = await runCli(['agent', '-m', '/dream'], s.home);
    expect(first.code).toBe(0);
    expect(fake?.requests.length).toBe(requestsBefore + 1);

    // Now `.git` becomes a link to a host directory, with new history for Dream to work on.
    const relink = [
      line(2, 'the user moved to Berlin'),
      'mv .git old-git', // (rm -rf is refused by the exec guard; the layer must hold whatever the shell did)
      `ln -sfn ${path.join(s.canary, 'gitdir')} .git`,
    ];
    fake?.enqueue(...plantSteps([...relink, 'echo planted'].join(' && ')), { text: 'planted again.' });
    expect((await runCli(['agent', '-m', 'plant again'], s.home)).code).toBe(0);
    fake?.enqueue({ text: 'Noted Berlin.' });
    const second = await runCli(['agent', '-m', '/dream'], s.home);
    expect(second.code).toBe(0);
    expect.soft(second.stdout).toMatch(/Dream failed: refusing .*\/\.git\/\S+: it resolves to .*outside the workspace/);

    const sent = requestsText();
    expect.soft(sent).not.toContain(API_KEY);
    expect.soft(sent).not.toContain(SECRET);
    expect.soft(snapshot(s.canary)).toEqual(before);
    expect.soft(fs.readFileSync(path.join(s.nanobotHome, 'config.json'), 'utf8')).toBe(config);
    expect(`${first.stdout}${first.stderr}${second.stdout}${second.stderr}`).not.toMatch(/TypeError|at .*\.js:\d+/);
  }, 60_000);
});
