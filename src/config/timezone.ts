/** The host's IANA time zone, for `agents.defaults.timezoneMode: "auto"` (as upstream: its UTC aliases are "UTC"). */

const UTC_ALIASES = new Set(['Etc/GMT', 'Etc/UTC', 'GMT', 'GMT0', 'Greenwich', 'UCT', 'Universal', 'Zulu', 'Etc/UCT']);

/** Node reads `TZ` and the system's zone at start-up; anything unusable falls back to UTC. */
export function detectSystemTimezone(): string {
  let zone: string | undefined;
  try {
    zone = new Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch {
    return 'UTC';
  }
  if (!zone || UTC_ALIASES.has(zone) || !isTimeZone(zone)) return 'UTC';
  return zone;
}

export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
