/**
 * Installing the packages a channel (or Bedrock) needs, with consent: `nanobot channels install <name> [--yes]`,
 * `nanobot provider install bedrock`, and the offer `nanobot channels login <name>` makes when its SDK is missing.
 * Never silent: without `--yes`, a terminal gets a y/N prompt (default no) and a script gets an error naming the
 * command to run.
 */
import { createInterface } from 'node:readline/promises';
import { UserError } from '../../util/errors.js';
import {
  installOnDemand,
  missingPackages,
  ON_DEMAND_USES,
  packageInstalled,
  packagesDir,
  pinnedSpec,
} from '../../util/on-demand.js';

export { missingPackages, packageInstalled };

export interface PackagesIo {
  out(text: string): void;
  env: NodeJS.ProcessEnv;
  /** Asks a yes/no question; undefined when there is no terminal to ask on. */
  ask?: (question: string) => Promise<boolean>;
  /** The npm executable (tests: a recording fake). */
  npm?: string;
}

/** A y/N prompt on the terminal, or undefined when stdin/stdout is not one. */
export function terminalAsk(): ((question: string) => Promise<boolean>) | undefined {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return undefined;
  return async (question) => {
    const rl = createInterface({ input: process.stdin, output: process.stdout });
    try {
      return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
    } finally {
      rl.close();
    }
  };
}

export const defaultPackagesIo = (): PackagesIo => {
  const ask = terminalAsk();
  return { out: (text) => process.stdout.write(text), env: process.env, ...(ask ? { ask } : {}) };
};

/** The packages `name` needs (a channel, or `bedrock`); a UserError listing the names for anything else. */
export function packagesFor(name: string): readonly string[] {
  const packages = ON_DEMAND_USES[name.toLowerCase()];
  if (packages) return packages;
  throw new UserError(
    `"${name}" has no packages to install.`,
    `Names with optional packages: ${Object.keys(ON_DEMAND_USES).join(', ')} (the WebSocket channel needs none).`,
  );
}

/** Installs what `name` needs if anything is missing, after consent (`yes`, or a y/N answer on the terminal). */
export async function installFor(name: string, home: string, yes: boolean, io: PackagesIo): Promise<void> {
  const needed = packagesFor(name);
  const missing = needed.filter((pkg) => !packageInstalled(pkg, home));
  if (missing.length === 0) {
    io.out(`${needed.join(' and ')} ${needed.length > 1 ? 'are' : 'is'} already installed.\n`);
    return;
  }
  const specs = missing.map(pinnedSpec);
  const dir = packagesDir(home);
  const question = `${name} needs ${specs.join(', ')}. Install into ${dir} with npm?`;
  if (!yes) {
    if (!io.ask)
      throw new UserError(
        `${name} needs ${specs.join(', ')}, which ${missing.length > 1 ? 'are' : 'is'} not installed.`,
        `Run \`nanobot channels install ${name} --yes\` to install into ${dir} (nothing is installed without it).`,
      );
    if (!(await io.ask(question))) {
      io.out(`Nothing installed. Later: nanobot channels install ${name}\n`);
      return;
    }
  }
  io.out(`Installing ${specs.join(', ')} into ${dir} …\n`);
  await installOnDemand(missing, { home, env: io.env, ...(io.npm ? { npm: io.npm } : {}) });
  io.out(`Installed ${specs.join(', ')}.\n`);
}

/**
 * `channels login`: when the channel's SDK is missing, say so and offer to install it (a terminal gets the y/N
 * prompt; a script gets the command to run, and the login goes on with what it can do without the SDK).
 */
export async function offerInstall(name: string, home: string, io: PackagesIo): Promise<void> {
  const needed = ON_DEMAND_USES[name.toLowerCase()];
  if (!needed || needed.every((pkg) => packageInstalled(pkg, home))) return;
  if (!io.ask) {
    io.out(
      `${name} needs ${needed.map(pinnedSpec).join(', ')}, not installed yet: run \`nanobot channels install ${name}\`.\n`,
    );
    return;
  }
  await installFor(name, home, false, io);
}
