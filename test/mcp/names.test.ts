import { describe, expect, it } from 'vitest';
import { limitName, MAX_TOOL_NAME_LENGTH, mcpToolName, ToolFilter } from '../../src/mcp/names.js';

describe('MCP tool names', () => {
  it('wraps tools, resources and prompts the way nanobot names them', () => {
    expect(mcpToolName('everything', 'tool', 'echo')).toBe('mcp_everything_echo');
    expect(mcpToolName('everything', 'resource', 'architecture.md')).toBe('mcp_everything_resource_architecture_md');
    expect(mcpToolName('everything', 'prompt', 'args-prompt')).toBe('mcp_everything_prompt_args-prompt');
  });

  it('replaces characters providers reject and collapses the runs', () => {
    expect(mcpToolName('my server', 'tool', 'read.file/v2 (beta)')).toBe('mcp_my_server_read_file_v2_beta_');
    expect(mcpToolName('srv', 'tool', 'ünïcode✓name')).toBe('mcp_srv_n_code_name');
  });

  it('keeps names within 64 characters, and two long names that differ only at the end stay apart', () => {
    const a = mcpToolName('server', 'tool', `${'x'.repeat(80)}_alpha`);
    const b = mcpToolName('server', 'tool', `${'x'.repeat(80)}_beta`);
    expect(a).toHaveLength(MAX_TOOL_NAME_LENGTH);
    expect(b).toHaveLength(MAX_TOOL_NAME_LENGTH);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^mcp_server_x+_[0-9a-f]{8}$/);
    expect(limitName('short')).toBe('short');
  });
});

describe('enabledTools', () => {
  it('["*"] allows every tool and the resources and prompts', () => {
    const filter = new ToolFilter('fs', ['*']);
    expect(filter.allowsAll).toBe(true);
    expect(filter.allowsTool('anything')).toBe(true);
    expect(filter.unmatched()).toEqual([]);
  });

  it('a list allows only the named tools, by raw or wrapped name, and reports entries that match nothing', () => {
    const filter = new ToolFilter('fs', ['read_text_file', 'mcp_fs_list_directory', 'no_such_tool']);
    expect(filter.allowsAll).toBe(false);
    expect(['read_text_file', 'list_directory', 'write_file'].filter((name) => filter.allowsTool(name))).toEqual([
      'read_text_file',
      'list_directory',
    ]);
    expect(filter.unmatched()).toEqual(['no_such_tool']);
  });

  it('[] allows nothing', () => {
    const filter = new ToolFilter('fs', []);
    expect(filter.allowsTool('read_text_file')).toBe(false);
    expect(filter.allowsAll).toBe(false);
  });
});
