/** Plain-text skill listings for people: `/skill` in chat and `nanobot skills list|show`. */
import type { SkillRequirements } from './frontmatter.js';
import type { Skill, SkillStatus } from './loader.js';

const MAX_DESCRIPTION_CHARS = 100;
const GROUPS: { status: SkillStatus; title: string }[] = [
  { status: 'available', title: 'Available' },
  { status: 'unavailable', title: 'Unavailable' },
  { status: 'disabled', title: 'Disabled' },
  { status: 'invalid', title: 'Invalid SKILL.md' },
];

export function sourceLabel(skill: Skill): string {
  return skill.source === 'builtin' ? 'built-in' : 'workspace';
}

/** Skills grouped by status, one line each: what an available one is for, why another one is not usable. */
export function formatSkillList(skills: readonly Skill[], workspaceDir: string): string {
  if (skills.length === 0) return `No skills found. Add one as ${workspaceDir}/<name>/SKILL.md.`;
  const width = Math.max(...skills.map((skill) => skill.name.length));
  const blocks: string[] = [];
  for (const { status, title } of GROUPS) {
    const group = skills.filter((skill) => skill.status === status);
    if (group.length === 0) continue;
    const lines = group.map(
      (skill) => `  ${skill.name.padEnd(width)}  ${sourceLabel(skill).padEnd(9)}  ${detail(skill)}`,
    );
    blocks.push(`${title} (${group.length}):\n${lines.join('\n')}`);
  }
  return blocks.join('\n');
}

function detail(skill: Skill): string {
  if (skill.status === 'invalid') return `${skill.file}: ${skill.reasons.join('; ')}`;
  if (skill.status !== 'available') return skill.reasons.join('; ');
  const notes = [
    ...(skill.manifest?.always ? ['always on'] : []),
    ...(skill.overridesBuiltin ? ['replaces the built-in'] : []),
  ];
  const description = shorten(skill.manifest?.description ?? '');
  return notes.length > 0 ? `${description} (${notes.join(', ')})` : description;
}

/** Everything about one skill except its instructions: source, status, requirements, install steps. */
export function formatSkillDetails(skill: Skill): string {
  const lines = [
    `${skill.name} (${sourceLabel(skill)}${skill.overridesBuiltin ? ', replaces the built-in' : ''})`,
    `Status: ${skill.status}${skill.reasons.length > 0 ? ` — ${skill.reasons.join('; ')}` : ''}`,
    `Path: ${skill.file}`,
  ];
  const manifest = skill.manifest;
  if (manifest) {
    lines.push(`Description: ${manifest.description}`);
    if (manifest.always) lines.push('Always on: its instructions are in every system prompt.');
    const requires = describeRequirements(manifest.requires);
    if (requires) lines.push(`Requires: ${requires}`);
    for (const step of manifest.install)
      lines.push(`Install step: ${step.command}${step.label ? ` (${step.label})` : ''}`);
  }
  return lines.join('\n');
}

export function describeRequirements(requires: SkillRequirements): string {
  const parts = [
    requires.bins.length > 0 ? `binaries ${requires.bins.join(', ')}` : '',
    requires.anyBins.length > 0 ? `one of ${requires.anyBins.join(', ')}` : '',
    requires.env.length > 0 ? `environment ${requires.env.join(', ')}` : '',
    requires.os.length > 0 ? `os ${requires.os.join(', ')}` : '',
  ];
  return parts.filter(Boolean).join('; ');
}

function shorten(text: string): string {
  return text.length <= MAX_DESCRIPTION_CHARS ? text : `${text.slice(0, MAX_DESCRIPTION_CHARS - 1)}…`;
}
