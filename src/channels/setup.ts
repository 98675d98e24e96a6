/**
 * A channel's setup description: the `channels.<name>` keys a person fills in to connect it, with their kind, help
 * text and which are required. One description per channel (next to its settings schema) serves every surface: the
 * CLI's `nanobot channels login` names the credentials from it, and the WebUI's channel catalog (src/webui/) shows it
 * as nanobot's setup contract and validates and saves the form with it.
 */

/** nanobot's field kinds: `secret` is a credential never shown back; `list` is comma-separated in a form. */
export type SetupFieldKind = 'string' | 'secret' | 'int' | 'bool' | 'list' | 'enum';

export interface SetupField {
  /** The key under `channels.<name>` (camelCase, as config.json has it); a dotted key is nested: `dm.allowFrom`. */
  key: string;
  kind: SetupFieldKind;
  label: string;
  /** One sentence: what to put here and where to get it. */
  help: string;
  /** Must be set before the channel can start. */
  required?: boolean;
  /** Named by `nanobot channels login` as what to set. */
  credential?: boolean;
  choices?: readonly string[];
  /** The schema's default, shown in the form. */
  defaultValue?: string | number | boolean;
}

export interface ChannelSetup {
  fields: readonly SetupField[];
  /** Where to create the bot or app (the platform's console). */
  officialUrl?: string;
  /** Alternatives of which one must be complete, e.g. Matrix: a password, or an access token. */
  oneOf?: readonly (readonly string[])[];
}

/** The credential keys `nanobot channels login` names. */
export function credentialKeys(setup: ChannelSetup): string[] {
  return setup.fields.filter((field) => field.credential).map((field) => field.key);
}

export function setupField(setup: ChannelSetup, key: string): SetupField | undefined {
  return setup.fields.find((field) => field.key === key);
}

/** A field's value in a `channels.<name>` block: a dotted key reads the nested object (`dm.allowFrom`). */
export function fieldValue(block: Readonly<Record<string, unknown>>, key: string): unknown {
  let value: unknown = block;
  for (const part of key.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/**
 * Writes form values (by field key) into a block in place, a dotted key into its nested object (created, or
 * replaced when it is not an object), so `dm.allowFrom` lands where the channel's schema reads it.
 */
export function setFieldValues(block: Record<string, unknown>, values: Readonly<Record<string, unknown>>): void {
  for (const [key, value] of Object.entries(values)) {
    const parts = key.split('.');
    const last = parts.pop() as string;
    let target = block;
    for (const part of parts) {
      const next = target[part];
      if (typeof next !== 'object' || next === null || Array.isArray(next)) target[part] = {};
      target = target[part] as Record<string, unknown>;
    }
    target[last] = value;
  }
}

/** A value counts as set when it is a non-blank string, a non-empty list, or any number or boolean. */
export function isSetValue(value: unknown): boolean {
  if (typeof value === 'string') return value.trim() !== '';
  if (Array.isArray(value)) return value.length > 0;
  return value !== undefined && value !== null;
}

/** The required fields (and `oneOf` alternatives, closest first) a block still lacks; empty when it is complete. */
export function missingSetup(setup: ChannelSetup, block: Readonly<Record<string, unknown>>): string[] {
  const missing = setup.fields
    .filter((field) => field.required)
    .filter((field) => {
      const value = fieldValue(block, field.key);
      return field.kind === 'bool' ? value !== true : !isSetValue(value);
    })
    .map((field) => field.key);
  const gaps = (setup.oneOf ?? []).map((keys) => keys.filter((key) => !isSetValue(fieldValue(block, key))));
  if (gaps.length > 0 && !gaps.some((gap) => gap.length === 0)) {
    missing.push(...gaps.reduce((best, gap) => (gap.length < best.length ? gap : best)));
  }
  return [...new Set(missing)];
}

/** Enough is saved to start the channel (a channel without required fields is never "configured" by this). */
export function setupComplete(setup: ChannelSetup, block: Readonly<Record<string, unknown>>): boolean {
  const requires = setup.fields.some((field) => field.required) || (setup.oneOf ?? []).length > 0;
  return requires && missingSetup(setup, block).length === 0;
}

/** The group policies every chat channel knows (channels/settings.ts). */
export const GROUP_POLICIES = ['mention', 'open', 'allowlist'] as const;

export const allowFromField: SetupField = {
  key: 'allowFrom',
  kind: 'list',
  label: 'Allowed senders',
  help: 'User ids or @usernames who may talk to the agent, comma-separated; * lets everyone in. Empty: strangers get a pairing code.',
};

export function groupPolicyField(defaultValue: (typeof GROUP_POLICIES)[number] = 'mention'): SetupField {
  return {
    key: 'groupPolicy',
    kind: 'enum',
    label: 'Group chats',
    help: 'mention: answer when @mentioned or replied to; open: answer every message; allowlist: only in groupAllowFrom.',
    choices: GROUP_POLICIES,
    defaultValue,
  };
}
