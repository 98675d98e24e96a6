/**
 * Every tool family through `nanobot agent -m` of the installed package, with a scripted model: each test checks the
 * tool's real effect and that the model was sent the real result. Covered elsewhere over dist/: write_file/read_file
 * (test/cli/agent-e2e.test.ts), spawn (test/cli/agent-subagents.test.ts), message in the CLI (agent-e2e), MCP with a
 * failing server (test/mcp/cli.test.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { type FakeWeb, startFakeWeb } from '../helpers/fake-web.js';
import { EVERYTHING, freePort } from '../mcp/helpers.js';
import { homeWith, lastToolResult, nanobot, removeInstalledCopy } from './harness.js';

const cleanups: (() => Promise<unknown> | undefined)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(removeInstalledCopy);

async function fakeLLM(script: Parameters<typeof startFakeLLM>[0]): Promise<FakeLLM> {
  const fake = await startFakeLLM(script);
  cleanups.push(() => fake.close());
  return fake;
}

async function fakeWeb(routes: Parameters<typeof startFakeWeb>[0]): Promise<FakeWeb> {
  const web = await startFakeWeb(routes);
  cleanups.push(() => web.close());
  return web;
}

const call = (name: string, args: Record<string, unknown>) => ({ toolCalls: [{ name, arguments: args }] });

/** What the model was sent after each step: request i+1 carries the result of the call made in reply i. */
const results = (fake: FakeLLM) => fake.requests.slice(1).map(lastToolResult);

describe('nanobot agent -m (installed package): tool families', () => {
  it('file tools: list_dir, grep, find_files, edit_file and apply_patch change the workspace and report it', async () => {
    const fake = await fakeLLM([
      call('list_dir', { path: 'notes' }),
      call('grep', { pattern: 'milk' }),
      call('find_files', { glob: '*.ts' }),
      call('edit_file', { path: 'notes/todo.md', old_text: '- call mom', new_text: '- call mom (Sunday)' }),
      call('apply_patch', {
        edits: [
          { path: 'src/app.ts', action: 'replace', old_text: "'hello'", new_text: "'hi there'" },
          { path: 'notes/done.md', action: 'add', new_text: '- nothing yet\n' },
        ],
      }),
      call('read_file', { path: 'notes/todo.md' }),
      { text: 'Your notes are up to date.' },
    ]);
    const { home, workspace } = homeWith(fake.url);
    mkdirSync(join(workspace, 'notes'));
    mkdirSync(join(workspace, 'src'));
    writeFileSync(join(workspace, 'notes', 'todo.md'), '- buy milk\n- call mom\n');
    writeFileSync(join(workspace, 'notes', 'ideas.md'), '- learn rust\n');
    writeFileSync(join(workspace, 'src', 'app.ts'), "export const greeting = 'hello';\n");

    const result = await nanobot(['agent', '-m', 'tidy my notes'], home);
    expect(result.stderr).not.toMatch(/Error/);
    expect({ code: result.code, stdout: result.stdout.trim() }).toEqual({
      code: 0,
      stdout: 'Your notes are up to date.',
    });

    const [listed, grepped, found, edited, patched, read] = results(fake);
    expect(listed).toMatch(/ideas\.md/);
    expect(listed).toMatch(/todo\.md/);
    expect(grepped).toMatch(/notes\/todo\.md/);
    expect(grepped).not.toMatch(/ideas\.md/);
    expect(found).toMatch(/src\/app\.ts/);
    expect(found).not.toMatch(/todo\.md/);
    expect(edited).not.toMatch(/^Error/);
    expect(patched).not.toMatch(/^Error/);
    expect(read).toMatch(/call mom \(Sunday\)/);
    expect(readFileSync(join(workspace, 'notes', 'todo.md'), 'utf8')).toBe('- buy milk\n- call mom (Sunday)\n');
    expect(readFileSync(join(workspace, 'src', 'app.ts'), 'utf8')).toBe("export const greeting = 'hi there';\n");
    expect(readFileSync(join(workspace, 'notes', 'done.md'), 'utf8')).toBe('- nothing yet\n');
  });

  it('exec runs the command in the workspace and the model gets its real output', async () => {
    const fake = await fakeLLM([
      call('exec', { command: "printf 'sum=%s\\n' $((6*7)); cat notes.txt; echo from-exec > made-by-exec.txt" }),
      { text: 'The sum is 42.' },
    ]);
    const { home, workspace } = homeWith(fake.url);
    writeFileSync(join(workspace, 'notes.txt'), 'exec can read this\n');

    const result = await nanobot(['agent', '-m', 'add 6 times 7'], home);
    expect({ code: result.code, stdout: result.stdout.trim() }).toEqual({ code: 0, stdout: 'The sum is 42.' });
    const [output] = results(fake);
    expect(output).toMatch(/sum=42/);
    expect(output).toMatch(/exec can read this/);
    expect(readFileSync(join(workspace, 'made-by-exec.txt'), 'utf8')).toBe('from-exec\n');
  });

  it('web_search (SearXNG at a loopback base URL) and web_fetch (a loopback page, one redirect) reach the model', async () => {
    const web = await fakeWeb({
      routes: {
        '/search': (request) => ({
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            results: [
              {
                title: `Release notes for ${request.url.searchParams.get('q')}`,
                url: 'https://example.org/releases',
                content: 'Version 2 adds a sundial.',
              },
            ],
          }),
        }),
        '/old-article': { status: 302, headers: { location: '/article' } },
        '/article': {
          headers: { 'content-type': 'text/html; charset=utf-8' },
          body: '<html><head><title>Fruit</title></head><body><article><h1>Fruit facts</h1><p>The secret word of this page is pineapple, and it is long enough to be the article.</p></article></body></html>',
        },
      },
    });
    const fake = await fakeLLM([
      call('web_search', { query: 'nanobot sundial' }),
      call('web_fetch', { url: web.url('/old-article') }),
      { text: 'Found it: pineapple.' },
    ]);
    const { home } = homeWith(fake.url, {
      tools: {
        ssrfWhitelist: ['127.0.0.1/32'],
        web: { search: { provider: 'searxng', baseUrl: web.origin } },
      },
    });

    const result = await nanobot(['agent', '-m', 'look it up'], home);
    expect(result.stderr).not.toMatch(/not a constructor|Error/);
    expect({ code: result.code, stdout: result.stdout.trim() }).toEqual({ code: 0, stdout: 'Found it: pineapple.' });
    const [searched = '', fetched = ''] = results(fake);
    // First what the model saw, so a failure shows the tool's own error (a broken bundle: "h is not a constructor").
    expect(searched).not.toMatch(/^Error/);
    expect(fetched).not.toMatch(/^Error/);
    expect(web.requests.find((r) => r.url.pathname === '/search')?.url.searchParams.get('q')).toBe('nanobot sundial');
    expect(searched).toMatch(/Release notes for nanobot sundial/);
    expect(searched).toMatch(/https:\/\/example\.org\/releases/);
    expect(searched).toMatch(/Version 2 adds a sundial\./);
    expect(web.requests.map((r) => r.url.pathname)).toEqual(['/search', '/old-article', '/article']);
    expect(fetched).toMatch(/The secret word of this page is pineapple/);
    // The redirect target is the server's choice, so it reaches the model fenced (issue 15 item 9).
    expect(fetched).toMatch(/"finalUrl": "<<<UNTRUSTED_CONTENT nonce=\w+ source=redirect target>>>\\n/);
    expect(fetched).toContain(`\\n${web.url('/article')}\\n<<<END_UNTRUSTED_CONTENT`);
  });

  it('MCP: a stdio server and a Streamable HTTP server, both answering the model', async () => {
    const port = await freePort();
    const http = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
      env: { PATH: process.env.PATH, PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    cleanups.push(() => stopChild(http));
    await new Promise<void>((resolve, reject) => {
      http.stderr?.on('data', (data: Buffer) => {
        if (/listening/i.test(String(data))) resolve();
      });
      http.once('exit', (code) => reject(new Error(`server-everything exited with ${code}`)));
    });
    const fake = await fakeLLM([
      call('mcp_local_echo', { message: 'hello over stdio' }),
      call('mcp_remote_get-sum', { a: 2, b: 40 }),
      { text: 'Both servers answered.' },
    ]);
    const { home } = homeWith(fake.url, {
      tools: {
        web: { enable: false },
        mcpServers: {
          local: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
          remote: { url: `http://127.0.0.1:${port}/mcp` },
        },
      },
    });

    const result = await nanobot(['agent', '-m', 'use the servers'], home);
    expect(result.stderr).not.toMatch(/unavailable|Error/);
    expect({ code: result.code, stdout: result.stdout.trim() }).toEqual({ code: 0, stdout: 'Both servers answered.' });
    const [echoed, summed] = results(fake);
    expect(echoed).toMatch(/Echo: hello over stdio/);
    expect(summed).toMatch(/The sum of 2 and 40 is 42/);
  });

  it('cron: the job the model adds is what `nanobot cron list` shows', async () => {
    const fake = await fakeLLM([
      // From the terminal chat a job must be an agent task (a reminder has no way to reach a terminal when due).
      call('cron', {
        action: 'add',
        name: 'stretch',
        message: 'Time to stretch',
        every_seconds: 3600,
        deliver: 'agent',
      }),
      { text: 'I will remind you every hour.' },
    ]);
    const { home } = homeWith(fake.url);

    const result = await nanobot(['agent', '-m', 'remind me to stretch every hour'], home);
    expect({ code: result.code, stdout: result.stdout.trim() }).toEqual({
      code: 0,
      stdout: 'I will remind you every hour.',
    });
    const [added = ''] = results(fake);
    expect(added).not.toMatch(/^Error/);
    const id = /\b([0-9a-f]{8})\b/.exec(added)?.[1];
    expect(id, added).toBeDefined();
    const list = await nanobot(['cron', 'list'], home);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`^${id}\\s+stretch\\s+every hour`, 'm'));
  });

  it('skills: a workspace skill whose frontmatter needs the full YAML parser is offered to the model', async () => {
    const fake = await fakeLLM([{ text: 'I can deploy.' }]);
    const { home, workspace } = homeWith(fake.url);
    mkdirSync(join(workspace, 'skills', 'deploy'), { recursive: true });
    writeFileSync(
      join(workspace, 'skills', 'deploy', 'SKILL.md'),
      '---\nname: deploy\ndescription: >\n  Ships the app\n  to production.\ntags: [ops, release]\n---\nRun ./deploy.sh.\n',
    );

    const result = await nanobot(['agent', '-m', 'can you deploy?'], home);
    expect(result.stderr).toBe('');
    expect({ code: result.code, stdout: result.stdout.trim() }).toEqual({ code: 0, stdout: 'I can deploy.' });
    expect(JSON.stringify(fake.requests[0]?.body.messages)).toMatch(/\*\*deploy\*\* - Ships the app to production\./);
  });
});

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}
