import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolCall } from '../../src/providers/types.js';
import { closestNames, ERROR_RECOVERY_HINT, ToolRegistry } from '../../src/tools/registry.js';
import { defineTool, fail, ok, type Tool } from '../../src/tools/types.js';
import { makeContext, textOf } from './helpers.js';

const HINT = '[Analyze the error above and try a different approach.]';

function call(name: string, args: string | object): ToolCall {
  return {
    id: 'call_1',
    type: 'function',
    function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
  };
}

/** Echoes its parsed arguments so tests can see what validation produced. */
function echoTool(name = 'echo'): Tool {
  return defineTool({
    name,
    description: `Echo (${name})`,
    parameters: z.object({
      text: z
        .string()
        .describe('What to echo')
        .meta({ aliases: ['message'] }),
      count: z.number().int().min(1).optional(),
      loud: z.boolean().optional(),
      tags: z.array(z.string()).optional(),
    }),
    concurrencySafe: true,
    async execute(args) {
      return ok(JSON.stringify(args));
    },
  });
}

function registryWith(...tools: Tool[]): ToolRegistry {
  const registry = new ToolRegistry();
  for (const tool of tools) registry.register(tool);
  return registry;
}

const noArgsTool = (name: string, execute: Tool['execute']): Tool =>
  defineTool({ name, description: name, parameters: z.object({ verbose: z.boolean().optional() }), execute });

describe('ToolRegistry definitions', () => {
  it('emits JSON Schema without $schema, with additionalProperties false and without private alias metadata', () => {
    const [definition] = registryWith(echoTool()).definitions();
    expect(definition?.type).toBe('function');
    const parameters = definition?.function.parameters ?? {};
    expect(parameters.$schema).toBeUndefined();
    expect(parameters.additionalProperties).toBe(false);
    expect(parameters.required).toEqual(['text']);
    expect(JSON.stringify(parameters)).not.toContain('aliases');
    expect(parameters.properties).toMatchObject({ text: { type: 'string', description: 'What to echo' } });
    expect(parameters.properties).toMatchObject({ count: { type: 'integer', minimum: 1 } });
    expect(JSON.stringify(parameters)).not.toContain(String(Number.MAX_SAFE_INTEGER));
  });

  it('sorts by name (MCP tools last) and is byte-stable regardless of registration order', () => {
    const a = registryWith(echoTool('zeta'), echoTool('mcp_srv_a'), echoTool('alpha'));
    const b = registryWith(echoTool('alpha'), echoTool('zeta'), echoTool('mcp_srv_a'));
    expect(a.names()).toEqual(['alpha', 'zeta', 'mcp_srv_a']);
    expect(JSON.stringify(a.definitions())).toBe(JSON.stringify(b.definitions()));
  });

  it('caches definitions until the set of tools changes', () => {
    const registry = registryWith(echoTool('alpha'));
    const first = registry.definitions();
    expect(registry.definitions()).toBe(first);
    registry.register(echoTool('beta'));
    const second = registry.definitions();
    expect(second).not.toBe(first);
    expect(second.map((d) => d.function.name)).toEqual(['alpha', 'beta']);
    registry.unregister('alpha');
    expect(registry.definitions().map((d) => d.function.name)).toEqual(['beta']);
  });

  it('rejects duplicate names and reports concurrency safety', () => {
    const registry = registryWith(
      echoTool('alpha'),
      noArgsTool('writer', async () => ok('')),
    );
    expect(() => registry.register(echoTool('alpha'))).toThrow(/already registered/);
    expect(registry.isConcurrencySafe('alpha')).toBe(true);
    expect(registry.isConcurrencySafe('writer')).toBe(false);
    expect(registry.isConcurrencySafe('missing')).toBe(false);
    expect(registry.has('alpha')).toBe(true);
    expect(registry.get('writer')?.name).toBe('writer');
  });
});

describe('ToolRegistry.execute', () => {
  const ctx = makeContext();

  it('suggests the closest tool name for an unknown tool', async () => {
    const registry = registryWith(echoTool('read_file'), echoTool('write_file'), echoTool('exec'));
    const result = await registry.execute(call('read_fil', { text: 'x' }), ctx);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(`Error: Tool 'read_fil' not found. Did you mean 'read_file'?${ERROR_RECOVERY_HINT}`);
    expect(textOf(await registry.execute(call('ReadFile', {}), ctx))).toContain("Did you mean 'read_file'");
  });

  it('lists the available tools when nothing is close', async () => {
    const registry = registryWith(echoTool('read_file'), echoTool('exec'));
    const text = textOf(await registry.execute(call('teleport_to_mars', {}), ctx));
    expect(text).toContain("Tool 'teleport_to_mars' not found. Available tools: exec, read_file.");
  });

  it('treats empty arguments as {}', async () => {
    let seen: unknown;
    const registry = registryWith(
      noArgsTool('status', async (args) => {
        seen = args;
        return ok('fine');
      }),
    );
    expect(textOf(await registry.execute(call('status', ''), ctx))).toBe('fine');
    expect(seen).toEqual({});
  });

  it('reports invalid JSON arguments as an error the model can fix', async () => {
    const result = await registryWith(echoTool()).execute(call('echo', '{"text": "unterminated'), ctx);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^Error: Invalid parameters for tool 'echo': the arguments were not valid JSON/);
    expect(textOf(result).endsWith(HINT)).toBe(true);
  });

  it('casts strings to the declared types before validating', async () => {
    const result = await registryWith(echoTool()).execute(
      call('echo', { text: 42, count: '5', loud: 'true', tags: '["a","b"]' }),
      ctx,
    );
    expect(result.isError).toBeFalsy();
    expect(JSON.parse(textOf(result))).toEqual({ text: '42', count: 5, loud: true, tags: ['a', 'b'] });
  });

  it('does not cast ambiguous values', async () => {
    const result = await registryWith(echoTool()).execute(call('echo', { text: 'x', count: 'five' }), ctx);
    expect(textOf(result)).toContain('count: expected number, got string');
  });

  it('names every invalid parameter: missing, wrong type and unknown', async () => {
    const result = await registryWith(echoTool()).execute(
      call('echo', { count: 2.5, loud: 'maybe', colour: 'red' }),
      ctx,
    );
    const text = textOf(result);
    expect(result.isError).toBe(true);
    expect(text).toMatch(/^Error: Invalid parameters for tool 'echo': /);
    expect(text).toContain('text: missing required parameter');
    expect(text).toContain('loud: expected boolean, got string');
    expect(text).toContain('count:');
    expect(text).toContain('colour: unknown parameter (allowed: text, count, loud, tags)');
    expect(text.endsWith(HINT)).toBe(true);
  });

  it('accepts a declared alias for a parameter', async () => {
    const result = await registryWith(echoTool()).execute(call('echo', { message: 'hi' }), ctx);
    expect(JSON.parse(textOf(result))).toEqual({ text: 'hi' });
  });

  it('turns a thrown exception into an error result', async () => {
    const registry = registryWith(
      noArgsTool('boom', async () => {
        throw new Error('disk on fire');
      }),
    );
    const result = await registry.execute(call('boom', {}), ctx);
    expect(result).toEqual({ content: `Error executing boom: disk on fire${ERROR_RECOVERY_HINT}`, isError: true });
  });

  it('adds the recovery hint to error results from tools exactly once', async () => {
    const registry = registryWith(noArgsTool('nope', async () => fail('no such file')));
    const text = textOf(await registry.execute(call('nope', {}), ctx));
    expect(text).toBe(`Error: no such file${ERROR_RECOVERY_HINT}`);
  });

  it('cuts over-long results and says how much was omitted and how to read more', async () => {
    const registry = new ToolRegistry({ maxResultChars: 100 });
    registry.register(noArgsTool('big', async () => ok('x'.repeat(1000))));
    const text = textOf(await registry.execute(call('big', {}), ctx));
    expect(text.startsWith('x'.repeat(100))).toBe(true);
    expect(text).not.toContain('x'.repeat(101));
    expect(text).toContain('900 more characters omitted');
    expect(text).toMatch(/offset\/limit/);
  });

  it('defaults to a 16000-character cap and leaves shorter results alone', async () => {
    const registry = registryWith(
      noArgsTool('big', async () => ok('y'.repeat(20_000))),
      noArgsTool('small', async () => ok('short')),
    );
    expect(textOf(await registry.execute(call('big', {}), ctx))).toContain('4000 more characters omitted');
    expect(textOf(await registry.execute(call('small', {}), ctx))).toBe('short');
  });

  it('does not run a tool when the turn is already cancelled', async () => {
    let ran = false;
    const registry = registryWith(
      noArgsTool('work', async () => {
        ran = true;
        return ok('done');
      }),
    );
    const controller = new AbortController();
    controller.abort();
    const result = await registry.execute(call('work', {}), makeContext({ signal: controller.signal }));
    expect(result.isError).toBe(true);
    expect(ran).toBe(false);
  });
});

describe('closestNames', () => {
  it('matches on normalised names and small edit distances only', () => {
    expect(closestNames('list-dir', ['list_dir', 'exec'])).toEqual(['list_dir']);
    expect(closestNames('exce', ['exec', 'edit_file'])).toEqual(['exec']);
    expect(closestNames('zzzzzz', ['exec', 'list_dir'])).toEqual([]);
  });
});
