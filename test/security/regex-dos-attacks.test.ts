/**
 * A model-written regular expression cannot stall the process (the class of issue 15 item 5: bounded work for any
 * input). grep, search_history and write_stdin's wait_for take a pattern from the model; JavaScript's backtracking
 * engine runs `(a+)+$` on 48 × `a` for days, on the main thread, so one tool call froze every session, /health and
 * every channel. The built CLI must answer each such call with an error and finish the turn; the corpus below is
 * checked against the matcher itself too (a budget is the bound, so these tests count outcomes, never time).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BoundedRegex, RegexBudget, RegexTimeoutError } from '../../src/security/bounded-regex.js';
import { compileWaitFor } from '../../src/tools/exec-sessions.js';
import { globMatcher } from '../../src/tools/search/search-common.js';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';

/** Patterns that backtrack exponentially (or worse than quadratically) on the victim text below. */
const CATASTROPHIC = [
  '(a+)+$',
  '(a+)+b',
  '(a*)*$',
  '(a|a)+$',
  '(a|aa)+$',
  '(a|a?)+$',
  '^(a+)+$',
  '(?:a+){2,}$',
  '(a+)*(b|c)',
  '([a-z]+)*$',
  '(\\w+)+!!',
  '^(\\w+\\s?)*$',
  '(.*a){30}$',
  '(?:(?:a|a)+)+z',
  '((a+)+)+\\d',
  '(?<x>a+)+$',
  '(a+)+(?=b)',
  '(a+)+\\1c',
];
const VICTIM = `${'a'.repeat(48)}!`;
const GLOBS = ['*a*a*a*a*a*a*a*b', '**/*a*a*a*a*a*a*a*a*c', '*a?a*a*a*a*a*a*a*b*'];

describe('BoundedRegex: a backtracking pattern fails within its budget', () => {
  it.each(CATASTROPHIC)('%s: lines, first match and test all stop with RegexTimeoutError', (pattern) => {
    for (const flags of ['u', 'iu', 'g']) {
      const regex = new BoundedRegex(pattern, flags, new RegexBudget(150));
      expect(() => regex.matchLines(`ok\n${VICTIM}\n`, false)).toThrow(RegexTimeoutError);
    }
    expect(() => new BoundedRegex(pattern, 'gi', new RegexBudget(150)).firstMatch(VICTIM, 99)).toThrow(
      RegexTimeoutError,
    );
    expect(() => new BoundedRegex(pattern, '', new RegexBudget(150)).test(VICTIM)).toThrow(RegexTimeoutError);
  });

  it('after a timeout the next pattern still works (a new worker), and answers match RegExp', () => {
    expect(() => new BoundedRegex('(a+)+$', 'u', new RegexBudget(150)).test(VICTIM)).toThrow(RegexTimeoutError);
    const text = 'alpha\r\nbeta gamma\n\nfoo(bar)\nBETA\n';
    const cases: [string, string, [number, number][]][] = [
      ['beta', 'u', [[1, 0]]],
      [
        'beta',
        'iu',
        [
          [1, 0],
          [4, 0],
        ],
      ],
      [
        '^\\w+$',
        'u',
        [
          [0, 0],
          [4, 0],
        ],
      ],
      ['foo\\(bar\\)', 'u', [[3, 0]]],
      [
        'a$',
        'u',
        [
          [0, 4],
          [1, 9],
        ],
      ],
      ['(?<=beta )g', 'u', [[1, 5]]],
      ['x{3}', 'u', []],
    ];
    for (const [pattern, flags, expected] of cases) {
      expect(new BoundedRegex(pattern, flags, new RegexBudget()).matchLines(text, false)).toEqual(expected);
    }
    expect(new BoundedRegex('o+', 'gi', new RegexBudget()).firstMatch('foo boo zoo', 99)).toEqual({
      index: 1,
      length: 2,
      more: 2,
    });
    expect(() => new BoundedRegex('(', 'u', new RegexBudget())).toThrow(SyntaxError);
  });

  it.each(GLOBS)('glob %s (grep, find_files): the filter stops with RegexTimeoutError', (glob) => {
    const matches = globMatcher(glob, new RegexBudget(150));
    const name = 'a'.repeat(120);
    expect(() => matches?.(name, name, `sub/${name}`)).toThrow(RegexTimeoutError);
  });

  it('ordinary globs match as before (in-process up to two wildcards, through the worker beyond)', () => {
    const cases: [string, string, boolean][] = [
      ['*.ts', 'x.ts', true],
      ['*.ts', 'x.tsx', false],
      ['**/*.test.ts', 'a/b/c.test.ts', true],
      ['src/**', 'src/a/b', true],
      ['*.{ts,js}', 'a.js', true],
      ['a*b*c*d', 'axbxcxd', true],
      ['a*b*c*d', 'axbxcx', false],
      ['.env', '.env', true],
      ['[ab]?.md', 'bx.md', true],
    ];
    for (const [glob, candidate, expected] of cases) {
      const matches = globMatcher(glob);
      expect(glob.includes('/') ? matches?.('', candidate) : matches?.(candidate), `${glob} ~ ${candidate}`).toBe(
        expected,
      );
    }
  });

  it.each(CATASTROPHIC.slice(0, 6))('write_stdin wait_for /%s/ never matches instead of hanging', (pattern) => {
    const matches = compileWaitFor(`/${pattern}/`);
    expect(matches(VICTIM)).toBe(false);
    expect(matches(VICTIM)).toBe(false);
  });
});

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe('nanobot agent -m: a hostile model sends backtracking patterns', () => {
  it('every grep and search_history call with one fails with a clear error and the turn finishes', async () => {
    const home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    const ws = path.join(home, '.nanobot', 'workspace');
    fs.writeFileSync(path.join(ws, 'victim.txt'), `first line\n${VICTIM}\nlast line\n`);
    // A file name the model could create, for globs that backtrack polynomially (degree = number of stars).
    fs.writeFileSync(path.join(ws, 'a'.repeat(120)), 'x\n');
    const patterns = CATASTROPHIC.slice(0, 5);
    fake = await startFakeLLM([
      {
        toolCalls: [
          ...patterns.map((pattern) => ({ name: 'grep', arguments: { pattern, output_mode: 'content' } })),
          { name: 'grep', arguments: { pattern: '(A+)+$', case_insensitive: true, path: 'victim.txt' } },
          { name: 'search_history', arguments: { query: '/(a+)+$/', scope: 'session' } },
          { name: 'search_history', arguments: { query: '/(a|aa)+$/' } },
          ...GLOBS.map((glob) => ({ name: 'find_files', arguments: { glob } })),
          { name: 'grep', arguments: { pattern: 'x', glob: GLOBS[0] } },
          // Ordinary searches in the same turn still work.
          { name: 'find_files', arguments: { glob: '**/*.txt' } },
          { name: 'grep', arguments: { pattern: 'l[a-z]st', output_mode: 'content' } },
          { name: 'search_history', arguments: { query: 'victim', scope: 'session' } },
        ],
      },
      { text: 'Done.' },
    ]);
    editConfig(home, (c) => {
      c.agents.defaults.provider = 'custom';
      c.agents.defaults.model = 'test-model';
      c.providers.custom = { apiKey: 'sk-test', apiBase: `${fake?.url ?? ''}/v1` };
    });

    const result = await runCli(['agent', '-m', `Search the victim: ${VICTIM}`], home);
    expect(result.stderr).not.toMatch(/RangeError|uncaught/i);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('Done.');

    const last = fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1);
    const messages = (last?.body.messages ?? []) as { role: string; content: unknown }[];
    const results = messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
    expect(results).toHaveLength(patterns.length + GLOBS.length + 7);
    const refused = results.filter((text) => /took too long to match/.test(text));
    expect(refused).toHaveLength(patterns.length + GLOBS.length + 4);
    expect(results.at(-3)).toContain('victim.txt');
    expect(results.at(-2)).toContain('victim.txt:3: last line');
    expect(results.at(-1)).toContain('victim');
    expect(results.at(-1)).not.toMatch(/took too long/);
  }, 120_000);
});
