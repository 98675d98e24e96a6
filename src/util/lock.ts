/** Cross-process file locks. proper-lockfile (and the graceful-fs it patches in) loads on first use, not at start-up. */
export async function lockFile(): Promise<typeof import('proper-lockfile').lock> {
  // From source, Node exposes the CommonJS exports as named exports; the esbuild bundle only has `default`.
  const module = (await import('proper-lockfile')) as typeof import('proper-lockfile') & {
    default?: typeof import('proper-lockfile');
  };
  return module.lock ?? (module.default as typeof import('proper-lockfile')).lock;
}
