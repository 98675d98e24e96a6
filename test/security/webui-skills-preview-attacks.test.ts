/**
 * Hostile sources for the WebUI's skill check and install (`skill.preview`, `skill.install`), through a real gateway:
 * the preview fetches and unpacks exactly what the install would, so each class is tried against both. Skill names
 * that climb out of skills/, archives whose entries escape (../, absolute, a symbolic or hard link pointing out, a
 * device), a folder whose file links outside it, and archive URLs on private addresses under many spellings (no
 * connection may be made) or redirecting to one. Nothing may be written into or beside the workspace.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { type FakeWeb, startFakeWeb } from '../helpers/fake-web.js';
import { type ApiClient, apiClient } from '../webui-api/api-helpers.js';

const ACTIONS = ['skill.preview', 'skill.install'] as const;
let run: WebUiGateway;
let api: ApiClient;
let web: FakeWeb;
let base: string;
beforeAll(async () => {
  run = await startWebUiGateway();
  api = await apiClient(run);
  web = await startFakeWeb();
  base = mkdtempSync(join(tmpdir(), 'nb-preview-evil-'));
});
afterAll(async () => {
  await web.close();
  await api.close();
  await run.close();
});

const status = (answer: Record<string, unknown>) => (answer.error as { status?: number } | undefined)?.status;
const workspaceEntries = () => readdirSync(run.workspace).sort();
const skillEntries = () =>
  existsSync(join(run.workspace, 'skills')) ? readdirSync(join(run.workspace, 'skills')).sort() : [];

/** One ustar entry (type '0' file, '1' hard link, '2' symbolic link, '3' character device…) and the end blocks. */
function tarEntry(name: string, type: string, body = '', linkname = ''): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0);
  header.write('0000644\0', 100);
  header.write('0000000\0', 108);
  header.write('0000000\0', 116);
  header.write(`${body.length.toString(8).padStart(11, '0')}\0`, 124);
  header.write('00000000000\0', 136);
  header.write('        ', 148);
  header.write(type, 156);
  header.write(linkname, 157);
  header.write('ustar\u000000', 257);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  const data = Buffer.alloc(Math.ceil(body.length / 512) * 512);
  data.write(body);
  return Buffer.concat([header, data]);
}

function tarFile(name: string, entries: Buffer[]): string {
  const path = join(base, name);
  const skill = tarEntry('evil/SKILL.md', '0', '---\nname: evil\ndescription: escapes\n---\n');
  writeFileSync(path, Buffer.concat([skill, ...entries, Buffer.alloc(1024)]));
  return path;
}

/** Refused by both actions for `reason` (so a test catches a check that is gone even when another layer holds). */
async function expectRefused(source: string, label: string, reason: RegExp): Promise<void> {
  const before = { workspace: workspaceEntries(), skills: skillEntries() };
  for (const action of ACTIONS) {
    const answer = await api.request(action, { source });
    expect(answer.ok, `${action} ${label}`).toBe(false);
    expect(status(answer), `${action} ${label}`).toBe(400);
    expect((answer.error as { message: string }).message, `${action} ${label}`).toMatch(reason);
  }
  expect({ workspace: workspaceEntries(), skills: skillEntries() }, label).toEqual(before);
}

describe('what skill.preview unpacks is checked as skill.install checks it', () => {
  it('refuses archives with escaping entries, links pointing out and devices', async () => {
    const archives: [string, Buffer[]][] = [
      ['dotdot.tar', [tarEntry('evil/../../escaped.txt', '0', 'gotcha')]],
      ['dotdot-lead.tar', [tarEntry('../escaped.txt', '0', 'gotcha')]],
      ['dotdot-deep.tar', [tarEntry('evil/a/../../../escaped.txt', '0', 'gotcha')]],
      ['backslash.tar', [tarEntry('evil\\..\\..\\escaped.txt', '0', 'gotcha')]],
      ['absolute.tar', [tarEntry(`${base}/escaped.txt`, '0', 'gotcha')]],
      ['drive.tar', [tarEntry('C:/escaped.txt', '0', 'gotcha')]],
      ['symlink-abs.tar', [tarEntry('evil/passwd', '2', '', '/etc/passwd')]],
      ['symlink-up.tar', [tarEntry('evil/up', '2', '', '../../../../etc')]],
      ['symlink-dir-then-write.tar', [tarEntry('evil/out', '2', '', '..'), tarEntry('evil/out/x.txt', '0', 'x')]],
      ['hardlink-abs.tar', [tarEntry('evil/shadow', '1', '', '/etc/shadow')]],
      ['hardlink-up.tar', [tarEntry('evil/up', '1', '', '../outside.txt')]],
      ['chardev.tar', [tarEntry('evil/tty', '3')]],
      ['fifo.tar', [tarEntry('evil/pipe', '6')]],
    ];
    for (const [name, entries] of archives) {
      // (through a link just unpacked: tar itself refuses that one)
      const reason = name.includes('then-write') ? /through symbolic link/ : /outside the skill folder|not a file or/;
      await expectRefused(tarFile(name, entries), name, reason);
    }
    expect(existsSync(join(base, 'escaped.txt'))).toBe(false);
    expect(existsSync(join(base, '..', 'escaped.txt'))).toBe(false);
  });

  it('refuses a skill whose file links outside it, packed or not, and names that climb out', async () => {
    const linked = join(base, 'linked');
    mkdirSync(linked);
    writeFileSync(join(linked, 'SKILL.md'), '---\nname: linked\ndescription: links out\n---\n');
    symlinkSync('/etc/passwd', join(linked, 'passwd'));
    await expectRefused(linked, 'folder with a link out', /links outside the skill/);
    const packed = join(base, 'linked.tar.gz');
    await create({ gzip: true, file: packed, cwd: base }, ['linked']);
    await expectRefused(packed, 'archive with a link out', /outside the skill folder/);
    for (const [index, name] of ['../../victim', '..', '/etc/victim', 'a/../../victim', '..\\victim'].entries()) {
      const dir = join(base, `named-${index}`);
      mkdirSync(dir);
      writeFileSync(join(dir, 'SKILL.md'), `---\nname: ${JSON.stringify(name)}\ndescription: climbs\n---\n`);
      await expectRefused(dir, `name ${name}`, /cannot be a skill name/);
    }
  });

  it('never connects to a private address, however it is spelled, until the user allows it', async () => {
    const port = web.port;
    web.route('/skill.tar.gz', { body: 'not reached' });
    const spellings = [
      `http://127.0.0.1:${port}/skill.tar.gz`,
      `http://localhost:${port}/skill.tar.gz`,
      `http://127.1:${port}/skill.tar.gz`,
      `http://0x7f000001:${port}/skill.tar.gz`,
      `http://2130706433:${port}/skill.tar.gz`,
      `http://0177.0.0.1:${port}/skill.tar.gz`,
      `http://[::ffff:127.0.0.1]:${port}/skill.tar.gz`,
      `http://[::1]:${port}/skill.tar.gz`,
      `http://0.0.0.0:${port}/skill.tar.gz`,
      `HTTP://LOCALHOST:${port}/skill.TAR.GZ`,
      `http://user:pw@127.0.0.1:${port}/skill.tar.gz`,
      `http://169.254.169.254/latest/skill.tar.gz`,
      `http://10.0.0.1:9/skill.tgz`,
      `http://192.168.1.1:9/skill.tar`,
    ];
    for (const url of spellings) await expectRefused(url, url, /Blocked request/);
    expect(web.connections()).toBe(0);
  });

  it('with loopback allowed, a redirect to a metadata address is still refused', async () => {
    const path = join(run.dataDir, 'config.json');
    const original = readFileSync(path, 'utf8');
    const config = JSON.parse(original);
    config.tools.ssrfWhitelist = ['127.0.0.1/32'];
    writeFileSync(path, JSON.stringify(config));
    expect(await run.gateway.reload()).toBe(true);
    try {
      web.route('/moved.tar.gz', { status: 302, headers: { location: 'http://169.254.169.254/latest/x.tar.gz' } });
      web.route('/to-private.tar.gz', { status: 307, headers: { location: 'http://10.0.0.1:9/x.tar.gz' } });
      for (const route of ['/moved.tar.gz', '/to-private.tar.gz']) {
        await expectRefused(web.url(route), route, /redirect target refused/);
      }
    } finally {
      writeFileSync(path, original);
      await run.gateway.reload();
    }
  });
});
