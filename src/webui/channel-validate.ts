/**
 * `settings.channel.validate`: nanobot's `ChannelValidationPayload` for the saved block with the form's values on
 * top. It writes nothing. The required fields are checked, then the channel's own settings check (the one the
 * gateway runs before starting it), then, where the channel has one, a call to its platform at the endpoint saved in
 * config.json (a form cannot point that call elsewhere: only setup fields are taken from it).
 */
import type { RegisteredChannel, VerifyResult } from '../channels/definition.js';
import { fieldValue, isSetValue, missingSetup } from '../channels/setup.js';
import { redactSecrets } from '../security/secrets.js';
import { errorMessage, UserError } from '../util/errors.js';

export interface ValidationCheck {
  id: string;
  label: string;
  status: 'pass' | 'warn' | 'fail' | 'skipped';
  message?: string;
}

const STATUS_MESSAGES: Record<string, string> = {
  connected: 'Connection verified.',
  configured: 'Configuration is present, but full verification was not possible.',
  needs_setup: 'Required setup is missing.',
  invalid: 'Configuration was checked and looks invalid.',
};

export async function validateChannel(
  definition: RegisteredChannel,
  block: Readonly<Record<string, unknown>>,
  now: () => Date = () => new Date(),
): Promise<Record<string, unknown>> {
  const { setup } = definition;
  const checks: ValidationCheck[] = [];
  const missing = missingSetup(setup, block);
  for (const field of setup.fields.filter((candidate) => candidate.required)) {
    const value = fieldValue(block, field.key);
    const set = field.kind === 'bool' ? value === true : isSetValue(value);
    checks.push({
      id: `field:${field.key}`,
      label: field.label,
      status: set ? 'pass' : 'fail',
      message: set ? 'Configured.' : 'Required.',
    });
  }
  if (setup.oneOf && missing.some((key) => setup.oneOf?.some((keys) => keys.includes(key)))) {
    const labels = setup.oneOf.map((keys) => keys.map((key) => labelOf(definition, key)).join(' + ')).join(' or ');
    checks.push({
      id: 'requirement:0',
      label: 'Required setup',
      status: 'fail',
      message: `Complete one of: ${labels}.`,
    });
  }
  const secrets = setup.fields
    .filter((field) => field.kind === 'secret')
    .map((field) => fieldValue(block, field.key))
    .filter((value): value is string => typeof value === 'string' && value.length > 0);
  let identity: VerifyResult['identity'];
  if (missing.length === 0) {
    const parsed = parses(definition, block, secrets);
    checks.push(parsed);
    if (parsed.status === 'pass' && definition.verify) {
      const verified = await definition
        .verify(block)
        .catch(
          (error: unknown): VerifyResult => ({ status: 'warn', message: redactSecrets(errorMessage(error), secrets) }),
        );
      checks.push({ id: 'platform', label: 'Platform check', status: verified.status, message: verified.message });
      identity = verified.identity;
    } else if (parsed.status === 'pass') {
      checks.push({
        id: 'manual_review',
        label: 'Manual setup',
        status: 'skipped',
        message: 'This channel can be checked from saved fields, but not verified from here.',
      });
    }
  }
  const status =
    missing.length > 0
      ? 'needs_setup'
      : checks.some((check) => check.status === 'fail')
        ? 'invalid'
        : checks.some((check) => check.status === 'warn' || check.status === 'skipped')
          ? 'configured'
          : 'connected';
  return {
    name: definition.name,
    status,
    checks,
    identity: Object.fromEntries(Object.entries(identity ?? {}).filter(([, value]) => value)),
    missing_fields: missing,
    can_enable: status === 'configured' || status === 'connected',
    requires_restart: false,
    checked_at: now().toISOString(),
    message: STATUS_MESSAGES[status],
  };
}

/** The check the gateway runs before it starts the channel (schema and platform rules), its message redacted. */
function parses(
  definition: RegisteredChannel,
  block: Readonly<Record<string, unknown>>,
  secrets: string[],
): ValidationCheck {
  try {
    definition.parse(block);
    return { id: 'settings', label: 'Settings', status: 'pass', message: 'The channel can start with these settings.' };
  } catch (error) {
    const text =
      error instanceof UserError ? [error.message, error.hint].filter(Boolean).join(' ') : errorMessage(error);
    return { id: 'settings', label: 'Settings', status: 'fail', message: redactSecrets(text, secrets) };
  }
}

function labelOf(definition: RegisteredChannel, key: string): string {
  return definition.setup.fields.find((field) => field.key === key)?.label ?? key;
}
