/** /skill [name]: the skills this agent has (and why some cannot be used), or the details of one. */
import { formatSkillDetails, formatSkillList } from '../../skills/format.js';
import type { SkillsLoader } from '../../skills/loader.js';
import type { SlashCommand } from './types.js';

export function skillCommand(skills: SkillsLoader): SlashCommand {
  return {
    description: 'list skills (and why some are unavailable), or show one: /skill <name>',
    usage: '/skill [name]',
    // Reads files only: answered at once, even while a turn runs.
    tier: 'priority',
    run: async (args) => {
      const name = args.trim().replace(/^\$/, '');
      if (!name) {
        const all = skills.list();
        const list = formatSkillList(all, skills.workspaceDir);
        const example = all.find((skill) => skill.status === 'available');
        return example
          ? `${list}\n\nName one in a message as $${example.name} to give the agent its instructions.`
          : list;
      }
      const skill = skills.get(name);
      if (!skill) return `No skill named "${name}". /skill lists them.`;
      return formatSkillDetails(skill);
    },
  };
}
