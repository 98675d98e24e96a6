import { chmodSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SkillsLoader, type SkillsLoaderOptions } from '../../src/skills/loader.js';
import { BUILTIN_SKILLS } from '../../src/util/paths.js';
import { fakeBins, skillText, tempDir, writeSkill } from './helpers.js';

function setup(options: Partial<SkillsLoaderOptions> = {}) {
  const workspace = tempDir('nb-ws-');
  const builtin = tempDir('nb-builtin-');
  const loader = (extra: Partial<SkillsLoaderOptions> = {}) =>
    new SkillsLoader({ workspace, builtinDir: builtin, env: {}, searchPath: '', ...options, ...extra });
  return { workspace, skills: join(workspace, 'skills'), builtin, loader };
}

const status = (loader: SkillsLoader) =>
  Object.fromEntries(loader.list().map((skill) => [skill.name, [skill.status, ...skill.reasons].join(': ')]));

describe('SkillsLoader', () => {
  it('lets a workspace skill shadow the built-in one of the same name', () => {
    const { skills, builtin, loader } = setup();
    writeSkill(builtin, 'weather', skillText('name: weather\ndescription: Built-in weather.'));
    writeSkill(builtin, 'cron', skillText('name: cron\ndescription: Built-in cron.'));
    const mine = writeSkill(skills, 'weather', skillText('name: weather\ndescription: My own weather.'));

    const list = loader().list();
    expect(list.map((s) => [s.name, s.source, s.overridesBuiltin])).toEqual([
      ['cron', 'builtin', false],
      ['weather', 'workspace', true],
    ]);
    const listing = loader().systemPromptSections().join('\n');
    expect(listing).toContain(`- **weather** - My own weather.  \`${join(mine, 'SKILL.md')}\``);
    expect(listing).not.toContain('Built-in weather.');
  });

  it('hides skills whose binaries (looked up on PATH) or environment variables are missing, saying why', () => {
    const bins = fakeBins('gh');
    const { skills, loader } = setup();
    writeSkill(
      skills,
      'github',
      skillText('description: GitHub.\nmetadata:\n  nanobot:\n    requires:\n      bins: [gh]'),
    );
    writeSkill(skills, 'tmux', skillText('description: tmux.\nmetadata: {"nanobot":{"requires":{"bins":["tmux"]}}}'));
    writeSkill(
      skills,
      'notion',
      skillText('description: Notion.\nmetadata:\n  nanobot:\n    requires:\n      env: [NOTION_KEY]'),
    );
    writeSkill(skills, 'mac', skillText('description: Mac only.\nmetadata:\n  nanobot:\n    os: [darwin]'));
    // A file that is not executable does not count as the binary.
    writeFileSync(join(bins, 'tmux'), 'not a program');
    chmodSync(join(bins, 'tmux'), 0o644);

    const plain = loader({ searchPath: bins, platform: 'linux' });
    expect(status(plain)).toEqual({
      github: 'available',
      mac: 'unavailable: not for linux (only darwin)',
      notion: 'unavailable: missing env: NOTION_KEY',
      tmux: 'unavailable: missing binary: tmux',
    });
    const listing = plain.systemPromptSections().join('\n');
    expect(listing).toContain('**github**');
    expect(listing).not.toMatch(/tmux|notion|Mac only/);

    const withKey = loader({ searchPath: bins, platform: 'darwin', env: { NOTION_KEY: 'k' } });
    expect(status(withKey)).toMatchObject({ notion: 'available', mac: 'available' });
    // Set for nanobot, but exec would not pass it to the skill's commands.
    const filtered = loader({ env: { NOTION_KEY: 'k' }, commandEnvKeys: ['HOME', 'PATH'] });
    expect(status(filtered).notion).toBe(
      'unavailable: env NOTION_KEY is not passed to commands (add it to tools.exec.allowedEnvKeys)',
    );
  });

  it('leaves out skills named in disabledSkills, everywhere the model could see them', () => {
    const { skills, loader } = setup({ disabled: ['weather'] });
    writeSkill(skills, 'weather', skillText('description: Weather.', 'WEATHER BODY'));
    writeSkill(skills, 'cron', skillText('description: Cron.'));
    const skillsLoader = loader();
    expect(status(skillsLoader)).toEqual({
      cron: 'available',
      weather: 'disabled: disabled in agents.defaults.disabledSkills',
    });
    expect(skillsLoader.systemPromptSections().join('\n')).not.toContain('Weather');
    const invoked = skillsLoader.invokedSkills('check $weather please') ?? '';
    expect(invoked).not.toContain('WEATHER BODY');
    expect(invoked).toContain('[Skill weather was requested but is disabled');
  });

  it('puts always-on skills in full into the prompt and lists the rest in one line each', () => {
    const { skills, loader } = setup();
    const rules = writeSkill(
      skills,
      'house-rules',
      skillText(
        'name: house-rules\ndescription: Rules.\nalways: true',
        'Always answer in French.\nScripts: {baseDir}/bin',
      ),
    );
    writeSkill(skills, 'openclaw-always', skillText('description: X.\nmetadata: {"openclaw":{"always":true}}', 'OC'));
    writeSkill(skills, 'pdf', skillText('description: >\n  Work with PDF files:\n  merge, split.', 'PDF BODY'));

    const [active, listing] = loader().systemPromptSections();
    expect(active).toBe(
      `# Active Skills\n\n## Skill: house-rules\n\nAlways answer in French.\nScripts: ${rules}/bin\n\n` +
        '## Skill: openclaw-always\n\nOC',
    );
    expect(active).not.toContain('description:');
    expect(listing).toMatch(/^# Skills\n\n/);
    expect(listing).toContain(`- **pdf** - Work with PDF files: merge, split.  \`${join(skills, 'pdf', 'SKILL.md')}\``);
    expect(listing).not.toContain('PDF BODY');
    expect(listing).not.toContain('house-rules');
  });

  it('keeps the prompt sections byte-identical until a skill file changes', () => {
    const { skills, loader } = setup();
    const dir = writeSkill(skills, 'notes', skillText('description: Notes v1.'));
    const skillsLoader = loader();
    const first = skillsLoader.systemPromptSections();
    expect(skillsLoader.systemPromptSections()).toBe(first);

    writeFileSync(join(dir, 'SKILL.md'), skillText('description: Notes v2 with more words.'));
    utimesSync(join(dir, 'SKILL.md'), new Date(), new Date(Date.now() + 5_000));
    const second = skillsLoader.systemPromptSections();
    expect(second.join('\n')).toContain('Notes v2');
    writeSkill(skills, 'added', skillText('description: Added later.'));
    expect(skillsLoader.systemPromptSections().join('\n')).toContain('Added later.');
  });

  it('reads OpenClaw and ClawHub skills unchanged (metadata.openclaw / metadata.clawdbot, JSON or YAML)', () => {
    const bins = fakeBins('jq');
    const { skills, loader } = setup({ searchPath: bins });
    writeSkill(
      skills,
      'oc-json',
      skillText(
        'name: oc-json\ndescription: "OpenClaw skill"\nhomepage: https://example.com\n' +
          'metadata: {"openclaw":{"emoji":"🧰","requires":{"bins":["jq"],"anyBins":["docker","podman"]},' +
          '"install":[{"id":"brew","kind":"brew","formula":"jq","bins":["jq"]}]}}',
      ),
    );
    writeSkill(
      skills,
      'oc-yaml',
      skillText('name: oc-yaml\ndescription: YAML form.\nmetadata:\n  openclaw:\n    requires:\n      env: [OC_TOKEN]'),
    );
    writeSkill(
      skills,
      'clawhub',
      skillText('name: clawhub\ndescription: ClawHub form.\nmetadata:\n  clawdbot:\n    requires:\n      bins: [jq]'),
    );

    expect(status(loader())).toEqual({
      clawhub: 'available',
      'oc-json': 'unavailable: missing binary: one of docker, podman',
      'oc-yaml': 'unavailable: missing env: OC_TOKEN',
    });
    const ocJson = loader().get('oc-json');
    expect(ocJson?.manifest?.install).toEqual([{ command: 'brew install jq', id: 'brew', kind: 'brew' }]);
    expect(status(loader({ searchPath: fakeBins('jq', 'podman'), env: { OC_TOKEN: 't' } }))).toEqual({
      clawhub: 'available',
      'oc-json': 'available',
      'oc-yaml': 'available',
    });
  });

  it('marks a skill with a broken frontmatter invalid, with a reason a person can fix, and keeps it out', () => {
    const { skills, loader } = setup();
    writeSkill(skills, 'no-desc', skillText('name: no-desc'));
    writeSkill(skills, 'bad-yaml', skillText('name: bad-yaml\ndescription: [unclosed'));
    writeSkill(skills, 'no-front', '# Just markdown\n');
    writeSkill(skills, 'unclosed', '---\nname: unclosed\ndescription: x\n\n# Body');
    writeSkill(skills, 'bad-json', skillText('description: x\nmetadata: "{not json"'));
    const reasons = status(loader());
    expect(reasons['no-desc']).toBe('invalid: description is required: say what the skill does and when to use it');
    expect(reasons['bad-yaml']).toMatch(/^invalid: frontmatter is not valid YAML \(line \d+\): /);
    expect(reasons['no-front']).toMatch(/^invalid: no frontmatter: SKILL.md must start with a --- line/);
    expect(reasons.unclosed).toBe('invalid: frontmatter is not closed: add a --- line after it');
    expect(reasons['bad-json']).toMatch(/^invalid: metadata is a string but not valid JSON/);
    expect(loader().systemPromptSections()).toEqual([]);
  });

  it('ships built-in skills that all parse, with the requirements they need', () => {
    const loader = new SkillsLoader({ workspace: tempDir(), builtinDir: BUILTIN_SKILLS, env: {}, searchPath: '' });
    const list = loader.list();
    expect(list.map((s) => s.name)).toEqual([
      'cron',
      'github',
      'image-generation',
      'memory',
      'skill-creator',
      'summarize',
      'tmux',
      'weather',
    ]);
    expect(list.filter((s) => s.status === 'invalid')).toEqual([]);
    expect(loader.get('github')?.manifest?.requires.bins).toEqual(['gh']);
    expect(loader.get('tmux')?.manifest?.requires.bins).toEqual(['tmux']);
    expect(loader.get('memory')?.manifest?.always).toBe(true);
    for (const skill of list) expect(skill.manifest?.declaredName).toBe(skill.name);
  });
});
