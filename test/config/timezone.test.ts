import { describe, expect, it } from 'vitest';
import { detectSystemTimezone, type SystemZoneSources } from '../../src/config/timezone.js';

const KNOWN = new Set(['Europe/Berlin', 'Asia/Tokyo', 'America/Argentina/Buenos_Aires', 'EST5EDT']);

function sources(over: Partial<SystemZoneSources>): SystemZoneSources {
  return {
    env: {},
    localtimeLink: () => undefined,
    timezoneFile: () => undefined,
    known: (zone) => KNOWN.has(zone),
    ...over,
  };
}

describe('detectSystemTimezone (timezoneMode auto)', () => {
  it('reads TZ first, then the /etc/localtime link, then /etc/timezone', () => {
    const link = () => '/usr/share/zoneinfo/Europe/Berlin';
    expect(detectSystemTimezone(sources({ env: { TZ: 'Asia/Tokyo' }, localtimeLink: link }))).toBe('Asia/Tokyo');
    expect(detectSystemTimezone(sources({ env: { TZ: ':Asia/Tokyo' } }))).toBe('Asia/Tokyo');
    expect(detectSystemTimezone(sources({ localtimeLink: link }))).toBe('Europe/Berlin');
    expect(detectSystemTimezone(sources({ localtimeLink: () => '../usr/share/zoneinfo/Asia/Tokyo' }))).toBe(
      'Asia/Tokyo',
    );
    expect(detectSystemTimezone(sources({ timezoneFile: () => 'America/Argentina/Buenos_Aires\n' }))).toBe(
      'America/Argentina/Buenos_Aires',
    );
    expect(detectSystemTimezone(sources({ env: { TZ: 'EST5EDT' } }))).toBe('EST5EDT');
  });

  it("reads nanobot's UTC aliases, and a TZ it cannot use, as UTC", () => {
    for (const zone of ['Etc/UTC', 'GMT', 'Zulu', 'UCT']) {
      expect(detectSystemTimezone(sources({ env: { TZ: zone } }))).toBe('UTC');
    }
    for (const zone of ['Mars/Olympus', '../../etc/passwd', 'Europe/Berlin\u0000x', 'UTC0']) {
      expect(detectSystemTimezone(sources({ env: { TZ: zone } }))).toBe('UTC');
    }
  });

  it('skips a link or file that names no known zone', () => {
    const zone = detectSystemTimezone(
      sources({ localtimeLink: () => '/usr/share/zoneinfo/../../../etc/shadow', timezoneFile: () => 'Asia/Tokyo' }),
    );
    expect(zone).toBe('Asia/Tokyo');
  });
});
