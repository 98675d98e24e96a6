import { describe, expect, it } from 'vitest';
import type { McpServerConfig } from '../../src/config/schema.js';
import { chooseTransport, createMcpFetch, redactUrl, stdioEnvironment } from '../../src/mcp/transport.js';
import { createNetworkPolicy, NetworkBlockedError } from '../../src/security/network.js';

const server = (fields: Partial<McpServerConfig>): McpServerConfig => ({
  args: [],
  env: {},
  headers: {},
  toolTimeout: 30,
  enabledTools: ['*'],
  ...fields,
});

describe('transport choice', () => {
  it('detects stdio, SSE and Streamable HTTP like nanobot, and honours an explicit type', () => {
    expect(chooseTransport(server({ command: 'npx' }))).toEqual({ ok: true, type: 'stdio' });
    expect(chooseTransport(server({ url: 'http://127.0.0.1:3001/sse' }))).toEqual({ ok: true, type: 'sse' });
    expect(chooseTransport(server({ url: 'http://127.0.0.1:3001/sse/?x=1' }))).toEqual({ ok: true, type: 'sse' });
    expect(chooseTransport(server({ url: 'http://127.0.0.1:3001/mcp' }))).toEqual({
      ok: true,
      type: 'streamableHttp',
    });
    expect(chooseTransport(server({ url: 'http://h/sse', type: 'streamableHttp' }))).toMatchObject({
      type: 'streamableHttp',
    });
    expect(chooseTransport(server({ url: 'http://h/mcp', type: 'http' }))).toMatchObject({ type: 'streamableHttp' });
    expect(chooseTransport(server({ url: 'ws://h/mcp', type: 'websocket' }))).toMatchObject({
      ok: false,
      error: expect.stringMatching(/unknown "type" "websocket"/),
    });
    // nanobot writes empty strings for unset fields.
    expect(chooseTransport(server({ command: '', url: '' }))).toMatchObject({ ok: false });
  });

  it('keeps credentials and queries out of the URL it shows', () => {
    expect(redactUrl('https://user:secret@mcp.example.com:8443/mcp?token=abc#x')).toBe(
      'https://mcp.example.com:8443/mcp',
    );
  });
});

describe('stdio server environment', () => {
  it("passes the basics and the server's own env, never nanobot's secrets", () => {
    const env = stdioEnvironment(
      {
        PATH: '/usr/bin',
        HOME: '/home/me',
        LANG: 'C.UTF-8',
        ANTHROPIC_API_KEY: 'sk-ant-secret',
        NANOBOT_PROVIDERS__OPENAI__API_KEY: 'sk-secret',
        GITHUB_TOKEN: 'ghp_secret',
        SHELL: '() { :; }; echo pwned',
      },
      { GITHUB_TOKEN: 'the-one-for-this-server', DEBUG: '1' },
    );
    expect(env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/me',
      LANG: 'C.UTF-8',
      GITHUB_TOKEN: 'the-one-for-this-server',
      DEBUG: '1',
    });
  });
});

describe('HTTP server requests and the SSRF guard', () => {
  const network = createNetworkPolicy({
    resolve: async (host) => (host === 'sneaky.example' ? [{ address: '10.1.2.3', family: 4 }] : []),
  });

  function recordingFetch() {
    const urls: string[] = [];
    const fetch = async (url: string | URL) => {
      urls.push(String(url));
      return new Response('{}', { status: 200 });
    };
    return { urls, fetch };
  }

  it('trusts the host named in the configured url, even a loopback one', async () => {
    const base = recordingFetch();
    const guarded = createMcpFetch(new URL('http://127.0.0.1:3001/mcp'), network, base.fetch);
    expect((await guarded('http://127.0.0.1:3001/mcp', { method: 'POST' })).status).toBe(200);
    expect(base.urls).toEqual(['http://127.0.0.1:3001/mcp']);
  });

  it('refuses a private host the config did not name, before connecting to it', async () => {
    const base = recordingFetch();
    const guarded = createMcpFetch(new URL('http://127.0.0.1:3001/mcp'), network, base.fetch);
    await expect(guarded('http://127.0.0.1:22/')).rejects.toBeInstanceOf(NetworkBlockedError);
    await expect(guarded('http://169.254.169.254/latest/meta-data')).rejects.toThrow(/link-local/);
    await expect(guarded('http://sneaky.example/mcp')).rejects.toThrow(/resolves to 10\.1\.2\.3/);
    expect(base.urls).toEqual([]);
  });
});
