/**
 * `nanobot skills list | show NAME | install SOURCE [--force]`. Install copies a folder, a .tar.gz or a git
 * repository into `<workspace>/skills/<name>/`, then shows the files and every command the skill asks the user to
 * run; it runs none of them.
 */
import { describeRequirements, formatSkillDetails, formatSkillList } from '../../skills/format.js';
import type { InstallReport } from '../../skills/install.js';
import { type Skill, skillsLoaderFor } from '../../skills/loader.js';
import { UserError } from '../../util/errors.js';
import { BUILTIN_SKILLS } from '../../util/paths.js';
import type { GlobalOptions } from '../main.js';
import { setup } from '../setup.js';

export interface SkillsCliFlags {
  force?: boolean;
}

export interface SkillsCliDeps {
  out?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Defaults to the package's skills. */
  builtinDir?: string;
}

const MAX_COMMANDS_SHOWN = 20;

export async function runSkills(
  subcommand: string,
  args: string[],
  opts: GlobalOptions & SkillsCliFlags,
  deps: SkillsCliDeps = {},
): Promise<void> {
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const env = deps.env ?? process.env;
  const { loaded } = await setup(opts, env);
  const loader = skillsLoaderFor(loaded, env, deps.builtinDir ?? BUILTIN_SKILLS);
  switch (subcommand) {
    case 'list':
      out(formatSkillList(loader.list(), loader.workspaceDir));
      return;
    case 'show': {
      const name = args[0] ?? '';
      const skill = loader.get(name);
      if (!skill) throw new UserError(`No skill named "${name}".`, 'See the names with `nanobot skills list`.');
      out(formatSkillDetails(skill));
      out('');
      out(loader.readInstructions(skill).trimEnd());
      return;
    }
    case 'install': {
      const { installSkill } = await import('../../skills/install.js');
      const { createNetworkPolicy } = await import('../../security/network.js');
      const report = await installSkill(args[0] ?? '', {
        workspace: loaded.workspace,
        env,
        // Archive URLs are downloaded under the same rules as web_fetch (tools.ssrfWhitelist).
        network: createNetworkPolicy({ whitelist: loaded.config.tools.ssrfWhitelist }),
        ...(env.HOME ? { home: env.HOME } : {}),
        ...(opts.force ? { force: true } : {}),
      });
      printInstallReport(report, loader.get(report.name), out);
      return;
    }
    default:
      throw new UserError(
        `Unknown skills command "${subcommand}".`,
        'Use: nanobot skills list | show NAME | install SOURCE [--force]',
      );
  }
}

function printInstallReport(report: InstallReport, skill: Skill | undefined, out: (line: string) => void): void {
  const verb = report.replaced ? 'Replaced' : 'Installed';
  const replacesBuiltin = skill?.overridesBuiltin ? ' (it replaces the built-in one)' : '';
  out(`${verb} skill "${report.name}" in ${report.dir}${replacesBuiltin}.`);
  out(`Description: ${report.manifest.description}`);
  out(`Files (${report.files.length}):`);
  for (const file of report.files) out(`  ${file.path}  ${formatBytes(file.bytes)}`);
  const requires = describeRequirements(report.manifest.requires);
  if (requires) out(`Requires: ${requires}`);
  if (skill && skill.status !== 'available') out(`Not usable yet: ${skill.reasons.join('; ')}.`);

  const commands = report.commands;
  if (commands.length === 0) {
    out('It asks you to run no commands.');
    return;
  }
  out('');
  out('Commands this skill asks you (or the agent) to run. nanobot ran none of them; review them first:');
  for (const entry of commands.slice(0, MAX_COMMANDS_SHOWN)) {
    const origin = entry.from === 'metadata' ? '  (install step)' : '';
    const warning = entry.warning ? `  <- ${entry.warning}` : '';
    out(`  ${entry.warning ? '!' : ' '} ${entry.command}${origin}${warning}`);
  }
  if (commands.length > MAX_COMMANDS_SHOWN) {
    out(`    … and ${commands.length - MAX_COMMANDS_SHOWN} more in ${report.dir}/SKILL.md`);
  }
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
