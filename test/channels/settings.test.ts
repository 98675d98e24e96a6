import { describe, expect, it } from 'vitest';
import { channelSettingsSchema } from '../../src/channels/settings.js';

describe('channel settings', () => {
  it('accepts ids written as numbers, but refuses ones JSON has already rounded', () => {
    expect(channelSettingsSchema.parse({ allowFrom: [123456789, '@alice'] }).allowFrom).toEqual([
      '123456789',
      '@alice',
    ]);
    // 123456789012345678 parses as 123456789012345680: a Discord id that would silently admit nobody.
    const rounded = channelSettingsSchema.safeParse(JSON.parse('{"allowFrom": [123456789012345678]}'));
    expect(rounded.success).toBe(false);
    expect(rounded.error?.issues[0]?.message).toMatch(/put it in quotes/);
  });
});
