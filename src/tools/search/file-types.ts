/**
 * File-type shorthands for the search tools, like ripgrep's `--type`: `ts` means *.ts, *.tsx, *.mts, *.cts.
 * An unknown type is taken as a bare extension, so `type: "vue"` still finds *.vue files.
 */

const TYPE_EXTENSIONS: Record<string, readonly string[]> = {
  ts: ['ts', 'tsx', 'mts', 'cts'],
  typescript: ['ts', 'tsx', 'mts', 'cts'],
  tsx: ['tsx'],
  js: ['js', 'jsx', 'mjs', 'cjs'],
  javascript: ['js', 'jsx', 'mjs', 'cjs'],
  jsx: ['jsx'],
  py: ['py', 'pyi'],
  python: ['py', 'pyi'],
  md: ['md', 'mdx', 'markdown'],
  markdown: ['md', 'mdx', 'markdown'],
  json: ['json', 'jsonc', 'json5'],
  go: ['go'],
  rs: ['rs'],
  rust: ['rs'],
  java: ['java'],
  kotlin: ['kt', 'kts'],
  swift: ['swift'],
  c: ['c', 'h'],
  cpp: ['cpp', 'cc', 'cxx', 'hpp', 'hh', 'hxx', 'h'],
  cs: ['cs'],
  rb: ['rb'],
  ruby: ['rb'],
  php: ['php'],
  sh: ['sh', 'bash', 'zsh'],
  shell: ['sh', 'bash', 'zsh'],
  yaml: ['yaml', 'yml'],
  yml: ['yaml', 'yml'],
  toml: ['toml'],
  sql: ['sql'],
  html: ['html', 'htm'],
  css: ['css', 'scss', 'sass', 'less'],
  txt: ['txt'],
};

/** Extensions (lower case, no dot) for a type shorthand. */
export function extensionsForType(type: string): readonly string[] {
  const key = type
    .trim()
    .toLowerCase()
    .replace(/^\*?\./, '');
  return TYPE_EXTENSIONS[key] ?? [key];
}

/** A predicate on file names for the given type, or undefined when no type filter applies. */
export function fileTypeMatcher(type: string | undefined): ((name: string) => boolean) | undefined {
  if (!type?.trim()) return undefined;
  const extensions = new Set(extensionsForType(type));
  return (name) => {
    const dot = name.lastIndexOf('.');
    return dot > 0 && extensions.has(name.slice(dot + 1).toLowerCase());
  };
}
