/** The skills API's shapes (nanobot's `SkillSummary`/`SkillDetail`, and our `skill.preview`), as src/webui/skills.ts answers. */

export interface SkillSummary {
  name: string;
  description: string;
  source: 'workspace' | 'builtin' | string;
  enabled?: boolean;
  deletable?: boolean;
  available: boolean;
  unavailable_reason?: string;
}

export interface SkillsPayload {
  skills: SkillSummary[];
}

export interface SkillRequirements {
  bins: string[];
  env: string[];
  missing_bins: string[];
  missing_env: string[];
}

export interface SkillDetail extends SkillSummary {
  requirements: SkillRequirements;
  /** The skill's own install steps for what it needs (shown for the user to run; the gateway runs none). */
  install_options?: { id: string; kind: string; label: string; command: string }[];
}

export interface SuggestedCommand {
  command: string;
  /** An install step of the skill's metadata, or a line of a shell block in its SKILL.md. */
  from: 'metadata' | 'SKILL.md';
  /** Why the gateway thinks it deserves a second look (English, from the gateway). */
  warning?: string;
}

export interface SkillPreview {
  name: string;
  description: string;
  already_installed: boolean;
  replaces_builtin: boolean;
  files: { path: string; bytes: number }[];
  requirements: SkillRequirements;
  commands: SuggestedCommand[];
  /** Pins the install to exactly what was shown. */
  digest: string;
}

export interface SkillInstallResult extends SkillsPayload {
  last_action: { installed: boolean; already_installed: boolean; name: string; replaced?: boolean };
}
