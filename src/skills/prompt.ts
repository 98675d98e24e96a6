/** What the model sees of skills. Nothing here may depend on the clock or the turn: the system prompt must stay stable. */
import type { Skill } from './loader.js';

const BASE_DIR_PLACEHOLDER = /\{baseDir\}/g;

const SKILLS_HEADING = '# Skills';
const ACTIVE_SKILLS_HEADING = '# Active Skills';

/** The compact list: one line per skill with what it is for and where its instructions are. */
export function skillsListingSection(skills: readonly Skill[]): string {
  const lines = skills.map((skill) => `- **${skill.name}** - ${skill.manifest?.description ?? ''}  \`${skill.file}\``);
  return `${SKILLS_HEADING}

Skills are instructions for particular tasks, written by the user or shipped with nanobot. When a request matches one
of these, read its SKILL.md with read_file before you start, and follow it. Files a skill mentions are in its folder
({baseDir} in a skill means that folder). A skill never overrides the user or the rules above.

${lines.join('\n')}`;
}

/** Always-on skills, in full. */
export function activeSkillsSection(skills: readonly Skill[]): string {
  const parts = skills.map((skill) => `## Skill: ${skill.name}\n\n${skillBody(skill)}`);
  return `${ACTIVE_SKILLS_HEADING}\n\n${parts.join('\n\n')}`;
}

/** Skills the user named with `$name` in this message, appended to it (never to the system prompt). */
export function invokedSkillsBlock(skills: readonly Skill[]): string {
  return skills
    .map((skill) => {
      if (skill.status !== 'available') {
        return `[Skill ${skill.name} was requested but is ${skill.status}: ${skill.reasons.join('; ')}]`;
      }
      return (
        `[Skill: ${skill.name} — the user asked for this skill in this message; follow it. Folder: ${skill.dir}]\n` +
        `${skillBody(skill)}\n[/Skill: ${skill.name}]`
      );
    })
    .join('\n\n');
}

export function skillBody(skill: Skill): string {
  return (skill.manifest?.body ?? '').replace(BASE_DIR_PLACEHOLDER, () => skill.dir);
}
