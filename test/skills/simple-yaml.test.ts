import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseSimpleYaml } from '../../src/skills/simple-yaml.js';
import { BUILTIN_SKILLS } from '../../src/util/paths.js';

const SAMPLES = [
  'name: weather\ndescription: Get the weather (no key needed).',
  'name: x\ndescription: "Quoted: with a colon"\nalways: true',
  "name: x\ndescription: 'It''s single-quoted'\nalways: False",
  'description: C# and F# tips, 100% free\nhomepage: https://example.com/a#b',
  'metadata: {"openclaw":{"requires":{"bins":["jq"]},"always":true}}\ndescription: JSON metadata',
  'description: empty follows\nlicense:\ntags: ["a", "b"]',
  '# a comment\ndescription: after a comment\n\nname: spaced',
  'version: 1.2.0\nrevision: 1.0\ncount: 42\noffset: -3\nlicense: MIT',
  // Outside the subset: the full parser decides.
  'tags: [a, b]',
  'description: a: b',
  'description: value # comment',
  'description: >\n  folded\n  text',
  'metadata:\n  nanobot:\n    always: true\ndescription: nested',
  'version: 0x1F\ndescription: numbers',
  'version: 1e3',
  'description: x\ndescription: duplicate',
  'description: &anchor anchored',
  'description: "unterminated',
  'tags: [a, b',
  '- a list',
];

describe('parseSimpleYaml', () => {
  it('returns what the yaml package returns, or nothing for YAML it does not handle', () => {
    let handled = 0;
    for (const sample of SAMPLES) {
      const fast = parseSimpleYaml(sample);
      if (fast === undefined) continue;
      handled += 1;
      expect(fast, sample).toEqual(parse(sample) ?? {});
    }
    expect(handled).toBe(8);
  });

  it('handles the frontmatter of every built-in skill without the full parser', () => {
    for (const name of readdirSync(BUILTIN_SKILLS)) {
      const text = readFileSync(join(BUILTIN_SKILLS, name, 'SKILL.md'), 'utf8');
      const frontmatter = text.split('\n---\n', 1)[0]?.replace(/^---\n/, '') ?? '';
      const fast = parseSimpleYaml(frontmatter);
      expect(fast, name).toEqual(parse(frontmatter));
    }
  });
});
