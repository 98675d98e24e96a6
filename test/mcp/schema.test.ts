import { describe, expect, it } from 'vitest';
import { parametersFromJsonSchema } from '../../src/mcp/schema.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { ok } from '../../src/tools/types.js';

function registryWith(inputSchema: unknown) {
  const registry = new ToolRegistry();
  const seen: unknown[] = [];
  registry.register({
    name: 'mcp_srv_tool',
    description: 'd',
    parameters: parametersFromJsonSchema(inputSchema),
    async execute(args) {
      seen.push(args);
      return ok('done');
    },
  });
  return { registry, seen };
}

const call = (args: object) => ({
  id: 'c1',
  type: 'function' as const,
  function: { name: 'mcp_srv_tool', arguments: JSON.stringify(args) },
});
const ctx = { signal: new AbortController().signal };

describe('MCP input schemas in the tool registry', () => {
  it("advertises the server's property schemas unchanged, with local $refs inlined", () => {
    const { registry } = registryWith({
      type: 'object',
      $defs: { Point: { type: 'object', properties: { x: { type: 'number' } } } },
      properties: {
        at: { $ref: '#/$defs/Point', description: 'Where' },
        mode: { type: 'string', enum: ['fast', 'slow'], default: 'fast' },
      },
      required: ['at'],
    });
    const parameters = registry.definitions()[0]?.function.parameters;
    expect(parameters).toEqual({
      type: 'object',
      properties: {
        // The registry closes every advertised object (additionalProperties: false), nested ones included.
        at: {
          type: 'object',
          properties: { x: { type: 'number' } },
          description: 'Where',
          additionalProperties: false,
        },
        mode: { type: 'string', enum: ['fast', 'slow'], default: 'fast' },
      },
      required: ['at'],
      additionalProperties: false,
    });
  });

  it('reports a missing required parameter and an unknown one, and casts by the declared type', async () => {
    const { registry, seen } = registryWith({
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'string' } },
      required: ['a'],
    });
    expect((await registry.execute(call({ b: 'x' }), ctx)).content).toMatch(/a: missing required parameter/);
    expect((await registry.execute(call({ a: 1, c: 2 }), ctx)).content).toMatch(/c: unknown parameter/);
    expect((await registry.execute(call({ a: '5' }), ctx)).content).toBe('done');
    expect(seen).toEqual([{ a: 5 }]);
  });

  it('survives recursive references and schemas that are not objects', () => {
    const recursive = registryWith({
      type: 'object',
      $defs: { Node: { type: 'object', properties: { child: { $ref: '#/$defs/Node' } } } },
      properties: { root: { $ref: '#/$defs/Node' }, remote: { $ref: 'https://example.com/schema.json' } },
    });
    expect(JSON.stringify(recursive.registry.definitions())).not.toContain('$ref');
    expect(registryWith(undefined).registry.definitions()[0]?.function.parameters).toMatchObject({
      type: 'object',
      properties: {},
    });
  });
});
