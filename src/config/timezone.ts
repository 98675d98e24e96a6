/**
 * The host's IANA time zone, for `agents.defaults.timezoneMode: "auto"` (as upstream: its UTC aliases are "UTC").
 * Read from `TZ` and the system's zone files first: asking Intl loads ICU's zone data, 8 MB of resident memory an
 * idle gateway does not otherwise need (the first turn's clock line loads it anyway). Intl is the last resort.
 */
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

const UTC_ALIASES = new Set(['Etc/GMT', 'Etc/UTC', 'GMT', 'GMT0', 'Greenwich', 'UCT', 'Universal', 'Zulu', 'Etc/UCT']);
const ZONEINFO = '/usr/share/zoneinfo';

export interface SystemZoneSources {
  env: NodeJS.ProcessEnv;
  /** The target of `/etc/localtime` (e.g. `/usr/share/zoneinfo/Europe/Berlin`), if it is a link. */
  localtimeLink(): string | undefined;
  /** The contents of `/etc/timezone` (Debian), if any. */
  timezoneFile(): string | undefined;
  /** Whether the zone database has this name. */
  known(zone: string): boolean;
}

const attempt = <T>(read: () => T): T | undefined => {
  try {
    return read();
  } catch {
    return undefined;
  }
};

const systemSources: SystemZoneSources = {
  env: process.env,
  localtimeLink: () => attempt(() => readlinkSync('/etc/localtime')),
  timezoneFile: () => attempt(() => readFileSync('/etc/timezone', 'utf8')),
  known: (zone) => (existsSync(ZONEINFO) ? existsSync(join(ZONEINFO, zone)) : isTimeZone(zone)),
};

/** An IANA name as the zone files spell it: `Area/City`, letters, digits, `_`, `-`, `+`; never `..`. */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

export function detectSystemTimezone(sources: SystemZoneSources = systemSources): string {
  const tz = sources.env.TZ?.trim().replace(/^:/, '');
  const fromLink = sources.localtimeLink()?.split('/zoneinfo/')[1];
  const candidates = tz !== undefined && tz !== '' ? [tz] : [fromLink, sources.timezoneFile()?.trim()];
  for (const zone of candidates) {
    if (!zone || !ZONE_NAME.test(zone)) continue;
    if (UTC_ALIASES.has(zone)) return 'UTC';
    if (sources.known(zone)) return zone;
  }
  if (tz) return 'UTC'; // a TZ we cannot read: Node falls back to UTC too
  return zoneFromIntl();
}

function zoneFromIntl(): string {
  const zone = attempt(() => new Intl.DateTimeFormat().resolvedOptions().timeZone);
  if (!zone || UTC_ALIASES.has(zone) || !isTimeZone(zone)) return 'UTC';
  return zone;
}

export function isTimeZone(zone: string): boolean {
  return attempt(() => new Intl.DateTimeFormat('en-US', { timeZone: zone })) !== undefined;
}
