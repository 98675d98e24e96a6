/**
 * Hostile requests to the WebUI's skills and MCP API (src/webui/skills.ts, mcp-presets.ts), through a real gateway:
 * skill names that climb out of `<workspace>/skills` or name a built-in, a planted link in skills/, install sources
 * that are relative, option-shaped or command-running git transports, archives with escaping entries, MCP server
 * names that are object keys of the config (`__proto__`…), wrong-typed and oversized payloads, and secrets (env,
 * headers, secret arguments, URL credentials, stderr quoting a key) that must never come back in any answer.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { SCRIPTED } from '../mcp/helpers.js';
import { type ApiClient, apiClient } from '../webui-api/api-helpers.js';

let run: WebUiGateway;
let api: ApiClient;
let outside: string;
beforeAll(async () => {
  run = await startWebUiGateway();
  api = await apiClient(run);
  // What a traversal would hit: a skill-shaped folder beside skills/, and one outside the workspace.
  outside = mkdtempSync(join(tmpdir(), 'nb-outside-'));
  for (const dir of [join(run.workspace, 'victim'), join(outside, 'victim'), join(run.dataDir, 'victim')]) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'SKILL.md'), '---\nname: victim\ndescription: must survive\n---\n');
  }
  mkdirSync(join(run.workspace, 'skills'), { recursive: true });
  symlinkSync(join(outside, 'victim'), join(run.workspace, 'skills', 'planted'));
});
afterAll(async () => {
  await api.close();
  await run.close();
});

const configText = () => readFileSync(join(run.dataDir, 'config.json'), 'utf8');
const victimsIntact = () =>
  [join(run.workspace, 'victim'), join(outside, 'victim'), join(run.dataDir, 'victim')].every((dir) =>
    existsSync(join(dir, 'SKILL.md')),
  );
const status = (answer: Record<string, unknown>) => (answer.error as { status?: number } | undefined)?.status;

const TRAVERSAL_NAMES: unknown[] = [
  '../victim',
  '../../victim',
  '..',
  '.',
  '/etc',
  `${'/'}${'tmp'}`,
  'skills/../victim',
  'mine/../../victim',
  '..\\victim',
  '%2e%2e%2fvictim',
  '..%2Fvictim',
  '....//victim',
  'victim\u0000',
  '\u0000',
  ' ../victim',
  '.deleting-x',
  '.installing-x',
  '~',
  '~/victim',
  '__proto__',
  'constructor',
  'toString',
  'a'.repeat(300),
  42,
  true,
  null,
  ['victim'],
  { name: 'victim' },
];

describe('skill names never leave <workspace>/skills', () => {
  it.each(['skill.delete', 'skill.update'])(
    '%s refuses every traversal spelling (400/404) and deletes nothing',
    async (action) => {
      const before = configText();
      for (const name of TRAVERSAL_NAMES) {
        const answer = await api.request(action, { name, enabled: false });
        expect(answer.ok, `${action} ${JSON.stringify(name)}`).toBe(false);
        expect([400, 404]).toContain(status(answer));
      }
      expect(victimsIntact()).toBe(true);
      expect(configText()).toBe(before);
    },
  );

  it('the detail route finds no skill under a traversal name, however it is encoded', async () => {
    for (const raw of [
      '..%2Fvictim',
      '%2e%2e',
      '%2E%2E%2F%2E%2E%2Fvictim',
      '..%5Cvictim',
      '%00',
      'victim%00',
      '__proto__',
    ]) {
      const answer = await api.get(`/api/webui/skills/${raw}`);
      expect([400, 404], raw).toContain(answer.status);
    }
    // Path segments that the router splits never reach the skill handler as one name.
    for (const raw of ['../victim', '../../config.json']) {
      const res = await fetch(`${run.url}/api/webui/skills/${raw}`, {
        headers: { authorization: `Bearer ${run.token}` },
      });
      expect(res.status).not.toBe(200);
    }
  });

  it('a link planted in skills/ is listed as unusable, never read, and deleting it removes only the link', async () => {
    const list = await api.get('/api/webui/skills');
    const planted = (list.body.skills as { name: string; available: boolean }[]).find((s) => s.name === 'planted');
    expect(planted).toMatchObject({ available: false });
    const detail = await api.get('/api/webui/skills/planted');
    expect(JSON.stringify(detail.body)).not.toContain('must survive');
    const deleted = await api.request('skill.delete', { name: 'planted' });
    expect(deleted.ok).toBe(true);
    expect(existsSync(join(run.workspace, 'skills', 'planted'))).toBe(false);
    expect(victimsIntact()).toBe(true);
  });

  it('built-in skills cannot be deleted under any spelling', async () => {
    for (const name of ['memory', 'cron', 'skill-creator', 'weather']) {
      expect(status(await api.request('skill.delete', { name })), name).toBe(403);
    }
    for (const name of ['MEMORY', 'memory/', ' memory/..', 'memory\u0000']) {
      expect([400, 404], name).toContain(status(await api.request('skill.delete', { name })));
    }
  });
});

describe('skill.install takes only what nanobot skills install takes, from absolute places', () => {
  it('refuses relative, option-shaped and command-running sources, and non-text payloads', async () => {
    const marker = join(outside, 'pwned');
    const sources: unknown[] = [
      'victim',
      '../victim',
      'skills/victim',
      'owner/repo',
      `--upload-pack=touch ${marker}`,
      `-c core.sshCommand=touch ${marker}`,
      `ext::sh -c touch% ${marker}`,
      `fd::17`,
      // Private addresses: refused before any connection (tools.ssrfWhitelist is empty here).
      'http://127.0.0.1:9/skill.tar.gz',
      'http://[::1]:9/skill.tgz',
      'http://169.254.169.254/latest/skill.tar',
      'http://0x7f000001:9/skill.tar.gz',
      'http://localhost:9/skill.tar.gz',
      '',
      '   ',
      42,
      ['/tmp'],
      { path: '/tmp' },
      null,
      'x'.repeat(5000),
    ];
    for (const source of sources) {
      const answer = await api.request('skill.install', { source });
      expect(answer.ok, JSON.stringify(source).slice(0, 60)).toBe(false);
      expect(status(answer)).toBe(400);
    }
    expect(existsSync(marker)).toBe(false);
    expect(await api.request('skill.install', { source: '/tmp', force: 'sure' })).toMatchObject({ ok: false });
  });

  it('refuses archives whose entries escape, and a skill whose files link outside it', async () => {
    const base = mkdtempSync(join(tmpdir(), 'nb-evil-tgz-'));
    const escaping = join(base, 'escape.tar');
    writeFileSync(escaping, tarWithEntry('../../escaped.txt', 'gotcha'));
    const linked = join(base, 'linked');
    mkdirSync(linked);
    writeFileSync(join(linked, 'SKILL.md'), '---\nname: linked\ndescription: links out\n---\n');
    symlinkSync('/etc/passwd', join(linked, 'passwd'));
    const badName = join(base, 'bad-name');
    mkdirSync(badName);
    writeFileSync(join(badName, 'SKILL.md'), '---\nname: ../../victim\ndescription: climbs\n---\n');
    const archive = join(base, 'bad-name.tar.gz');
    await create({ gzip: true, file: archive, cwd: base }, ['bad-name']);
    for (const source of [escaping, linked, badName, archive]) {
      const answer = await api.request('skill.install', { source });
      expect(answer.ok, source).toBe(false);
      expect(status(answer)).toBe(400);
    }
    expect(existsSync(join(base, '..', 'escaped.txt'))).toBe(false);
    expect(existsSync(join(run.workspace, 'escaped.txt'))).toBe(false);
    expect(victimsIntact()).toBe(true);
  });
});

/** A one-entry tar (ustar) whose entry name climbs out; the tar package would refuse to write one. */
function tarWithEntry(name: string, body: string): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0);
  header.write('0000644\0', 100);
  header.write('0000000\0', 108);
  header.write('0000000\0', 116);
  header.write(`${body.length.toString(8).padStart(11, '0')}\0`, 124);
  header.write('00000000000\0', 136);
  header.write('        ', 148);
  header.write('0', 156);
  header.write('ustar\u000000', 257);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  const data = Buffer.alloc(512);
  data.write(body);
  return Buffer.concat([header, data, Buffer.alloc(1024)]);
}

describe('MCP server names and payloads', () => {
  it('custom refuses bad names, wrong types and oversize values with a 400, and writes nothing', async () => {
    const before = configText();
    const good = { name: 'ok', command: process.execPath, args: [SCRIPTED] };
    const payloads: Record<string, unknown>[] = [
      ...['__proto__', 'constructor', '../x', 'a/b', 'a b', '', '-x', '_x', 'x'.repeat(65), 7, null, ['x']].map(
        (name) => ({ ...good, name }),
      ),
      { ...good, args: 7 },
      { ...good, args: { a: 'b' } },
      { ...good, args: [1, 2] },
      { ...good, args: '"quoted arg"' },
      { ...good, args: '[not json' },
      { ...good, args: Array.from({ length: 201 }, () => 'x') },
      { ...good, env: ['A=b'] },
      { ...good, env: { A: 1 } },
      { ...good, env: '{"A":' },
      { ...good, tool_timeout: 'soon' },
      { ...good, tool_timeout: 1.5 },
      { ...good, transport: 'ftp' },
      { ...good, command: 'x'.repeat(5000) },
      { ...good, enabled_tools: { all: true } },
      { name: 'remote', url: 'file:///etc/passwd' },
      { name: 'remote', url: 'javascript:alert(1)' },
      { name: 'remote', url: 'not a url', transport: 'sse' },
      { name: 'remote', transport: 'streamableHttp' },
      { name: 'remote', headers: { Authorization: 'Bearer x' }, url: 'http://127.0.0.1:9/mcp', auth: 'basic' },
      { name: 'nothing' },
    ];
    for (const payload of payloads) {
      const answer = await api.request('settings.mcp.custom', payload);
      expect(answer.ok, JSON.stringify(payload).slice(0, 80)).toBe(false);
      expect(status(answer), JSON.stringify(payload).slice(0, 80)).toBe(400);
    }
    for (const config of [
      '[]',
      '{"mcpServers": []}',
      '{}',
      '{"mcpServers": {"__proto__": {"command": "x"}}}',
      'nope',
      5,
    ]) {
      expect(status(await api.request('settings.mcp.import', { config })), String(config)).toBe(400);
    }
    expect(configText()).toBe(before);
  });

  it('actions on existing servers find none under object-key or traversal names (404/400)', async () => {
    for (const action of ['settings.mcp.remove', 'settings.mcp.tools', 'settings.mcp.test', 'settings.mcp.reconnect']) {
      for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', '../x', 'nope', '', 5, null]) {
        const answer = await api.request(action, { name, enabled_tools: ['*'] });
        expect(answer.ok, `${action} ${String(name)}`).toBe(false);
        expect([400, 404]).toContain(status(answer));
      }
    }
  });
});

describe('MCP secrets never come back', () => {
  const SECRETS = {
    env: 'envsecret-7f3a9c1e55',
    header: 'hdrsecret-0b1c2d3e4f',
    arg: 'argsecret-99aa88bb77',
    assigned: 'assigned-secret-1234',
    query: 'querysecret-5566778899',
    password: 'urlpassword-4433',
  };

  it('in the list, in every action answer and in a failed server error that quotes one', async () => {
    const answers: unknown[] = [];
    answers.push(
      await api.request('settings.mcp.custom', {
        name: 'leaky',
        command: process.execPath,
        args: [SCRIPTED, '--api-key', SECRETS.arg, `--token=${SECRETS.assigned}`],
        env: { API_TOKEN: SECRETS.env, FIXTURE_FAIL_AT_START: `login refused for ${SECRETS.env}` },
      }),
    );
    answers.push(
      await api.request('settings.mcp.import', {
        config: {
          mcpServers: {
            remote: {
              url: `http://user:${SECRETS.password}@127.0.0.1:9/mcp?api_key=${SECRETS.query}`,
              headers: { Authorization: `Bearer ${SECRETS.header}` },
            },
          },
        },
      }),
    );
    answers.push(await api.request('settings.mcp.test', { name: 'leaky' }));
    answers.push(await api.request('settings.mcp.test', { name: 'remote' }));
    answers.push(await api.request('settings.mcp.reconnect', { name: 'leaky' }));
    answers.push(await api.request('settings.mcp.tools', { name: 'remote', enabled_tools: ['a'] }));
    answers.push((await api.get('/api/settings/mcp-presets')).body);
    const text = JSON.stringify(answers);
    for (const [kind, secret] of Object.entries(SECRETS)) expect(text, kind).not.toContain(secret);
    // The secrets are still in the config, where they belong.
    for (const secret of Object.values(SECRETS)) expect(configText()).toContain(secret);
    expect(text).toContain('leaky');
    expect(text).toContain('http://127.0.0.1:9/mcp');
  });
});

describe('archive URLs (loopback whitelisted for this block only)', () => {
  it('refuses an oversized download, an HTTP error and a redirect to a private address', async () => {
    const path = join(run.dataDir, 'config.json');
    const original = configText();
    const config = JSON.parse(original);
    config.tools.ssrfWhitelist = ['127.0.0.1/32'];
    writeFileSync(path, JSON.stringify(config));
    expect(await run.gateway.reload()).toBe(true);
    const chunk = Buffer.alloc(1024 * 1024);
    const server = createServer((req, res) => {
      if (req.url === '/huge.tar.gz') {
        res.writeHead(200);
        let sent = 0;
        const pump = () => {
          while (sent < 60 && res.write(chunk)) sent += 1;
          if (sent >= 60) res.end();
          else res.once('drain', pump);
        };
        pump();
      } else if (req.url === '/moved.tar.gz') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data.tar.gz' });
        res.end();
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const expectations: [string, RegExp][] = [
        ['/huge.tar.gz', /larger than a skill may be/],
        ['/missing.tar.gz', /HTTP 404/],
        ['/moved.tar.gz', /Cannot download/],
      ];
      for (const [route, message] of expectations) {
        const answer = await api.request('skill.install', { source: `${base}${route}` });
        expect(answer, route).toMatchObject({ ok: false, error: { status: 400 } });
        expect((answer.error as { message: string }).message, route).toMatch(message);
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
      writeFileSync(path, original);
      await run.gateway.reload();
    }
  });
});
