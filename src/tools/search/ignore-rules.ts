/**
 * .gitignore handling for the search tools. Every directory's .gitignore applies to the paths beneath
 * it, deeper files winning, as in git; rules above the search root are loaded too (up to the repository
 * root, never above the workspace) so searching `src/` still honours the project's top-level .gitignore.
 */
import path from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { isPathInside } from '../../security/workspace.js';
import { WorkspaceFs } from '../../security/workspace-fs.js';

const MAX_GITIGNORE_BYTES = 1024 * 1024;

/** One .gitignore and how to turn a path relative to the search root into a path relative to it. */
interface IgnoreLevel {
  rules: Ignore;
  /** Prepended to a root-relative path: the search root's position below this level's directory. */
  prefix: string;
  /** Characters cut from the front of a root-relative path: this level's position below the root. */
  strip: number;
}

/** An immutable stack of .gitignore levels; `withFile` makes the stack for a subdirectory. */
export class IgnoreRules {
  private constructor(private readonly levels: readonly IgnoreLevel[]) {}

  static readonly empty = new IgnoreRules([]);

  /**
   * Rules of `root`'s ancestors, nearest last, stopping at a `.git` repository root or at `stopAt` (the real
   * workspace). Only ancestors inside `stopAt` are read, through the workspace-file layer (never through a link).
   */
  static forAncestorsOf(root: string, stopAt: string): IgnoreRules {
    const levels: IgnoreLevel[] = [];
    const workspace = new WorkspaceFs(stopAt);
    const relativeTo = (dir: string): string => path.relative(stopAt, dir);
    let dir = root;
    for (let depth = 0; depth < 64; depth++) {
      if (dir === stopAt || !isPathInside(dir, stopAt)) break;
      if (lookSafely(() => workspace.lstatSync(path.join(relativeTo(dir), '.git'))) !== undefined) break;
      const parent = path.dirname(dir);
      if (parent === dir) break;
      const text = lookSafely(() =>
        workspace.readTextIfExistsSync(path.join(relativeTo(parent), '.gitignore'), { maxBytes: MAX_GITIGNORE_BYTES }),
      );
      if (text !== undefined) {
        const below = path.relative(parent, root).split(path.sep).join('/');
        levels.unshift({ rules: ignore({ ignorecase: false }).add(text), prefix: `${below}/`, strip: 0 });
      }
      dir = parent;
    }
    return new IgnoreRules(levels);
  }

  /** The stack for a directory at `relativeDir` (root-relative, '' for the root) holding `gitignoreText`. */
  withFile(relativeDir: string, gitignoreText: string): IgnoreRules {
    const strip = relativeDir === '' ? 0 : relativeDir.length + 1;
    const level = { rules: ignore({ ignorecase: false }).add(gitignoreText), prefix: '', strip };
    return new IgnoreRules([...this.levels, level]);
  }

  /** Whether the root-relative path is ignored; the last level with an opinion decides, like git. */
  ignores(relative: string, isDir: boolean): boolean {
    let ignored = false;
    for (const level of this.levels) {
      const candidate = level.prefix + relative.slice(level.strip) + (isDir ? '/' : '');
      const verdict = level.rules.test(candidate);
      if (verdict.ignored) ignored = true;
      else if (verdict.unignored) ignored = false;
    }
    return ignored;
  }
}

/** A refused or unreadable ignore file counts as absent: it only ever narrows what is searched. */
function lookSafely<T>(look: () => T): T | undefined {
  try {
    return look();
  } catch {
    return undefined;
  }
}
