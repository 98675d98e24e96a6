/**
 * The commands a skill asks its user to run — install steps in its metadata and the lines of its shell blocks — so
 * `nanobot skills install` can show them before anyone runs them. nanobot never runs them itself: fake "prerequisite"
 * steps that pipe a download into a shell are how malicious skills spread.
 */
import type { SkillManifest } from './frontmatter.js';

export interface SuggestedCommand {
  command: string;
  from: 'metadata' | 'SKILL.md';
  /** Set when the command does something worth a second look. */
  warning?: string;
}

const SHELL_LANGUAGES = new Set([
  'bash',
  'sh',
  'shell',
  'zsh',
  'fish',
  'console',
  'terminal',
  'powershell',
  'ps1',
  'cmd',
]);
/** Interactive transcripts: only the lines after a prompt are commands. */
const TRANSCRIPT_LANGUAGES = new Set(['console', 'terminal']);
const FENCE = /^\s*(`{3,}|~{3,})\s*([^\s`]*)/;

const RISKS: { pattern: RegExp; warning: string }[] = [
  {
    pattern: /\b(?:curl|wget|iwr|irm)\b.*\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b/,
    warning: 'pipes a download into a shell',
  },
  { pattern: /\bbase64\b.*(?:-d\b|--decode)/, warning: 'decodes hidden content' },
  {
    pattern: /\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b|\|\s*(?:python3?|node|perl|ruby)\b/,
    warning: 'pipes text into an interpreter',
  },
  { pattern: /\beval\b|\biex\b|Invoke-Expression/i, warning: 'evaluates generated code' },
  { pattern: /\bsudo\b/, warning: 'runs as root' },
  { pattern: /\bchmod\s+(?:-R\s+)?(?:777|\+s)\b/, warning: 'loosens permissions' },
];

export function suggestedCommands(manifest: SkillManifest): SuggestedCommand[] {
  const commands: SuggestedCommand[] = [
    ...manifest.install.map((step) => withWarning({ command: step.command, from: 'metadata' })),
    ...shellBlockLines(manifest.body).map((command) => withWarning({ command, from: 'SKILL.md' })),
  ];
  const seen = new Set<string>();
  return commands.filter((entry) => !seen.has(entry.command) && seen.add(entry.command));
}

/** Non-empty, non-comment lines of fenced shell blocks (for console blocks, only the `$ …` lines). */
export function shellBlockLines(markdown: string): string[] {
  const lines: string[] = [];
  let fence: { marker: string; language: string } | undefined;
  for (const line of markdown.split(/\r?\n/)) {
    const match = FENCE.exec(line);
    if (fence) {
      if (match?.[1] && match[1][0] === fence.marker[0] && match[1].length >= fence.marker.length && !match[2]) {
        fence = undefined;
        continue;
      }
      if (!SHELL_LANGUAGES.has(fence.language)) continue;
      const command = commandOf(line, TRANSCRIPT_LANGUAGES.has(fence.language));
      if (command) lines.push(command);
      continue;
    }
    if (match?.[1]) fence = { marker: match[1], language: (match[2] ?? '').toLowerCase() };
  }
  return lines;
}

function commandOf(line: string, transcript: boolean): string | undefined {
  let text = line.trim();
  if (transcript) {
    const prompt = /^[$#>]\s+(.*)$/.exec(text);
    if (!prompt?.[1]) return undefined;
    text = prompt[1].trim();
  }
  if (!text || text.startsWith('#') || text.startsWith('//')) return undefined;
  return text;
}

function withWarning(entry: SuggestedCommand): SuggestedCommand {
  const risk = RISKS.find(({ pattern }) => pattern.test(entry.command));
  return risk ? { ...entry, warning: risk.warning } : entry;
}
