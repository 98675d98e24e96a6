/** `onboard --wizard`'s provider list and key question (the prompts themselves are @clack/prompts). */
import { describe, expect, it } from 'vitest';
import { keyQuestion, wizardProviders } from '../../src/cli/wizard.js';
import { PROVIDERS } from '../../src/providers/registry.js';

describe('onboard --wizard', () => {
  it('lists every provider once: no two entries share a label', () => {
    const labels = wizardProviders().map((p) => p.label);
    expect(new Set(labels).size).toBe(labels.length);
    expect(labels.filter((l) => l === 'OpenCode Zen')).toHaveLength(1);
    expect(labels).toContain('Custom (OpenAI-compatible)');
    // Only aliases are left out: every distinct label of a supported provider is there.
    const distinct = new Set(PROVIDERS.filter((p) => !p.unsupported).map((p) => p.label));
    expect(labels).toHaveLength(distinct.size);
  });

  it('asks for a key for every provider but OAuth ones, Custom and local endpoints included (empty allowed)', () => {
    for (const spec of wizardProviders()) {
      const question = keyQuestion(spec);
      if (spec.kind === 'oauth') expect(question, spec.name).toBeUndefined();
      else expect(question, spec.name).toMatch(/^API key for /);
    }
    const custom = PROVIDERS.find((p) => p.name === 'custom');
    expect(custom && keyQuestion(custom)).toBe(
      'API key for Custom (OpenAI-compatible) (leave empty if the endpoint needs none)',
    );
    const anthropic = PROVIDERS.find((p) => p.name === 'anthropic');
    expect(anthropic && keyQuestion(anthropic)).toContain('$ANTHROPIC_API_KEY');
  });
});
