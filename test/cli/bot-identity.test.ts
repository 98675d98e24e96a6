/**
 * The interactive chat in a real terminal (a pty from util-linux `script`): agents.defaults.botName/botIcon name the
 * agent as nanobot's CLI does, and command output (/help) keeps its lines and `<placeholders>` instead of being
 * reflowed as Markdown into one paragraph.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { homeWith } from '../e2e/harness.js';
import { editConfig } from './cli-helpers.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');
const hasScript = spawnSync('script', ['--version']).status === 0;

/** `nanobot agent` on a pseudo-terminal, fed `input`; what the terminal showed, control sequences removed. */
function chatOnTty(home: string, input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', `${process.execPath} ${BIN} agent`, '/dev/null'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, COLUMNS: '200', LINES: '50', TERM: 'xterm' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('error', reject);
    child.on('close', () => resolve(out.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '')));
    child.stdin.end(input);
  });
}

const home = (defaults: Record<string, unknown>) => {
  const { home } = homeWith('http://127.0.0.1:9');
  editConfig(home, (c) => Object.assign(c.agents.defaults, defaults));
  return home;
};

describe.skipIf(!hasScript)('nanobot agent in a terminal', () => {
  it('names the agent with botIcon and botName, and shows /help line by line with its placeholders', async () => {
    const shown = await chatOnTty(home({ botName: 'Jarvis', botIcon: '🤖' }), '/help\n/exit\n');
    expect(shown).toContain('🤖 Jarvis · test-model via custom');
    expect(shown).toMatch(/^🤖 Jarvis:\nCommands:\n\/new — /m);
    expect(shown).toMatch(/^\/help — show this help$/m);
    expect(shown).toMatch(/^\/dream-restore — .*<sha>$/m);
    expect(shown).toMatch(/^\/skill \[name\] — .*<name>$/m);
  });

  it('an empty botIcon leaves the icon out; by default the agent is 🐈 nanobot', async () => {
    expect(await chatOnTty(home({ botName: 'quickbot', botIcon: '' }), '/exit\n')).toMatch(/^quickbot · test-model/m);
    expect(await chatOnTty(home({}), '/exit\n')).toMatch(/^🐈 nanobot · test-model/m);
  });
});
