import { describe, expect, it } from 'vitest';
import { parseShellCommand } from '../../src/security/shell-parse.js';

const raws = (command: string) => parseShellCommand(command).map((segment) => segment.raw);
const words = (command: string) => parseShellCommand(command).map((segment) => segment.words.map((w) => w.value));

describe('parseShellCommand', () => {
  it('splits on every chaining operator and newlines', () => {
    expect(raws('a; b && c || d | e & f\ng')).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  });

  it('does not split inside quotes', () => {
    expect(raws(`echo "a; b && c" 'd | e'`)).toEqual([`echo "a; b && c" 'd | e'`]);
    expect(words(`echo "a; b" 'c|d' e\\;f`)).toEqual([['echo', 'a; b', 'c|d', 'e;f']]);
  });

  it('removes quotes and escapes from words', () => {
    expect(words(`"rm" -r''f r\\m $'\\x72m'`)).toEqual([['rm', '-rf', 'rm', 'rm']]);
  });

  it('lifts command substitutions, backticks and process substitutions out as segments', () => {
    expect(raws('echo $(rm -rf x) `shutdown now` <(cat y)')).toEqual([
      'rm -rf x',
      'shutdown now',
      'cat y',
      'echo $(rm -rf x) `shutdown now` <(cat y)',
    ]);
    expect(raws('echo "$(whoami)"')).toContain('whoami');
  });

  it('keeps arithmetic expansion as a word, not a command', () => {
    expect(raws('echo $((1 + 2))')).toEqual(['echo $((1 + 2))']);
  });

  it('treats subshell parentheses as separators', () => {
    expect(raws('(cd sub && ls)')).toEqual(['cd sub', 'ls']);
  });

  it('separates redirections from words, with fd prefixes and 2>&1', () => {
    const [segment] = parseShellCommand('rm foo 2>/dev/null >>log.txt 2>&1 &>all.txt');
    expect(segment?.words.map((w) => w.value)).toEqual(['rm', 'foo']);
    expect(segment?.redirects.map((r) => [r.op, r.target.value])).toEqual([
      ['>', '/dev/null'],
      ['>>', 'log.txt'],
      ['>&', '1'],
      ['&>', 'all.txt'],
    ]);
  });

  it('reads here-document bodies as data attached to their command', () => {
    const segments = parseShellCommand("cat > notes.txt <<'EOF'\nrm -rf / ; reboot\nEOF\necho done");
    expect(segments.map((s) => s.raw)).toEqual(["cat > notes.txt <<'EOF'", 'echo done']);
    expect(segments[0]?.heredocs).toEqual(['rm -rf / ; reboot']);
  });

  it('skips comments', () => {
    expect(raws('ls # ; rm -rf /')).toEqual(['ls']);
  });
});
