/** Cross-process file locks. proper-lockfile (and the graceful-fs it patches in) loads on first use, not at start-up. */
export async function lockFile(): Promise<typeof import('proper-lockfile').lock> {
  // A CommonJS package: the build gives its lazy chunk the same named exports as Node (scripts/cjs-facade.mjs).
  return (await import('proper-lockfile')).lock;
}
