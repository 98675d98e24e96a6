/** Setup fields with dotted keys (`dm.allowFrom`): read from and written into the nested object the schema reads. */
import { describe, expect, it } from 'vitest';
import { type ChannelSetup, fieldValue, missingSetup, setFieldValues } from '../../src/channels/setup.js';

const setup: ChannelSetup = {
  fields: [
    { key: 'token', kind: 'secret', label: 'Token', help: 'The token.', required: true },
    { key: 'dm.allowFrom', kind: 'list', label: 'DM allow list', help: 'Who may write.', required: true },
  ],
};

describe('channel setup fields', () => {
  it('writes a dotted key into its nested object, keeping the keys beside it', () => {
    const block: Record<string, unknown> = { enabled: true, dm: { policy: 'open' } };
    setFieldValues(block, { token: 't', 'dm.allowFrom': ['alice'] });
    expect(block).toEqual({ enabled: true, token: 't', dm: { policy: 'open', allowFrom: ['alice'] } });
    expect(block['dm.allowFrom']).toBeUndefined();
  });

  it('replaces a non-object where a nested object must go', () => {
    const block: Record<string, unknown> = { dm: 'broken' };
    setFieldValues(block, { 'dm.allowFrom': ['bob'] });
    expect(block).toEqual({ dm: { allowFrom: ['bob'] } });
  });

  it('reads a dotted key from the nested object, and nothing through a list or a scalar', () => {
    expect(fieldValue({ dm: { allowFrom: ['a'] } }, 'dm.allowFrom')).toEqual(['a']);
    expect(fieldValue({ dm: ['x'] }, 'dm.allowFrom')).toBeUndefined();
    expect(fieldValue({ dm: 'x' }, 'dm.allowFrom')).toBeUndefined();
    expect(fieldValue({ 'dm.allowFrom': ['flat'] }, 'dm.allowFrom')).toBeUndefined();
  });

  it('counts a nested required field as set only where the schema reads it', () => {
    expect(missingSetup(setup, { token: 't', 'dm.allowFrom': ['flat'] })).toEqual(['dm.allowFrom']);
    expect(missingSetup(setup, { token: 't', dm: { allowFrom: ['alice'] } })).toEqual([]);
  });
});
