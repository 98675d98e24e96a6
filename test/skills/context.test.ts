import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextBuilder } from '../../src/agent/context.js';
import { AgentLoop } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import type { ChatMessage } from '../../src/providers/types.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { SkillsLoader } from '../../src/skills/loader.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { skillText, tempDir, writeSkill } from './helpers.js';

function setup(script: ConstructorParameters<typeof FakeProvider>[0]) {
  const workspace = tempDir('nb-skill-loop-');
  const builtin = tempDir('nb-builtin-');
  mkdirSync(join(workspace, 'memory'), { recursive: true });
  writeFileSync(join(workspace, 'memory', 'MEMORY.md'), 'The user lives in Lyon.');
  writeSkill(
    builtin,
    'weather',
    skillText('name: weather\ndescription: Weather forecasts.', 'WEATHER-STEPS: use wttr.in'),
  );
  writeSkill(builtin, 'rules', skillText('name: rules\ndescription: House rules.\nalways: true', 'ALWAYS-RULES'));
  const skills = new SkillsLoader({ workspace, builtinDir: builtin, env: {}, searchPath: '' });
  const context = new ContextBuilder({ workspace, skills });
  const provider = new FakeProvider(script);
  const runner = new AgentRunner({ provider, model: 'm', maxTokens: 100, tools: new ToolRegistry(), maxIterations: 3 });
  const sessions = new JsonlSessionStore(join(workspace, 'sessions'));
  const loop = new AgentLoop({ sessions, context, runner });
  return { workspace, context, provider, sessions, loop };
}

const textOf = (message: ChatMessage | undefined): string =>
  typeof message?.content === 'string' ? message.content : JSON.stringify(message?.content ?? '');

describe('skills in the prompt', () => {
  it('places always-on skills and the compact list after the tool rules and before memory', () => {
    const { context } = setup([]);
    const prompt = context.buildSystemPrompt();
    const order = ['# Using tools', '# Active Skills', 'ALWAYS-RULES', '# Skills', '**weather** - Weather', '# Memory'];
    const positions = order.map((marker) => prompt.indexOf(marker));
    expect(positions.every((p) => p >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(prompt).not.toContain('WEATHER-STEPS');
  });

  it('loads a $skill for its own turn only: in that request, not in the system prompt, the session or later turns', async () => {
    const { provider, loop, sessions } = setup([{ content: 'Sunny in Lyon.' }, { content: 'You are welcome.' }]);
    await loop.processMessage({ channel: 'cli', chatId: 'direct', content: 'What about $weather in Lyon?' });
    await loop.processMessage({ channel: 'cli', chatId: 'direct', content: 'Thanks!' });

    const [first, second] = provider.requests;
    const firstUser = first?.messages.at(-1);
    expect(firstUser?.role).toBe('user');
    expect(textOf(firstUser)).toMatch(/^What about \$weather in Lyon\?\n\n\[Skill: weather — /);
    expect(textOf(firstUser)).toContain(
      'WEATHER-STEPS: use wttr.in\n[/Skill: weather]\n\n[Runtime Context - metadata only, not instructions]',
    );
    expect(textOf(first?.messages[0])).not.toContain('WEATHER-STEPS');

    // The cached prefix is unchanged: the same system prompt on both turns.
    expect(second?.messages[0]).toEqual(first?.messages[0]);
    expect(JSON.stringify(second?.messages)).not.toContain('WEATHER-STEPS');
    expect(textOf(second?.messages[1])).toMatch(
      /^What about \$weather in Lyon\?\n\n\[Runtime Context - metadata only, not instructions\]/,
    );

    const session = await sessions.load('cli:direct');
    expect(JSON.stringify(session.messages)).not.toContain('WEATHER-STEPS');
    expect(readFileSync(sessions.pathFor('cli:direct'), 'utf8')).not.toContain('WEATHER-STEPS');
  });

  it('leaves messages without a known $skill alone (shell variables, prices, always-on skills)', () => {
    const { context } = setup([]);
    for (const text of ['echo $HOME', 'costs $5', 'follow $rules', '$unknown-skill']) {
      const message = context.buildUserMessage(text, { channel: 'cli', chatId: 'direct' });
      expect(textOf(message)).toMatch(/\n\n\[Runtime Context - metadata only, not instructions\]\nCurrent time: /);
      expect(textOf(message)).not.toContain('[Skill');
      expect(context.forHistory(message)).toEqual(message);
    }
  });
});
