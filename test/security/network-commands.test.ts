/** Internal URLs named in shell commands (for the exec guard): literal checks only, no DNS. */
import { describe, expect, it } from 'vitest';
import { checkCommandUrls } from '../../src/security/command-urls.js';
import { createNetworkPolicy, findBlockedUrlsInText } from '../../src/security/network.js';

describe('checkCommandUrls', () => {
  it.each([
    { name: 'test_exec_blocks_curl_metadata', command: 'curl http://169.254.169.254/latest/meta-data/iam/' },
    { name: 'wget to localhost', command: 'wget -qO- http://localhost:8080/admin' },
    {
      name: 'loopback in quotes',
      command: 'python3 -c "import urllib.request as u; u.urlopen(\'http://127.0.0.1:5000\')"',
    },
    { name: 'numeric trick', command: 'curl http://0x7f.1/' },
    { name: 'decimal metadata', command: 'curl -s http://2852039166/' },
    { name: 'IPv6 loopback', command: 'curl "http://[::1]:3000/"' },
    { name: 'IPv4-mapped loopback', command: 'curl http://[::ffff:127.0.0.1]/' },
    {
      name: 'GCP metadata name',
      command: 'curl -H "Metadata-Flavor: Google" http://metadata.google.internal/computeMetadata/v1/',
    },
    { name: 'private address without scheme', command: 'curl 10.0.0.5:8500/v1/kv/?recurse' },
    { name: 'bare metadata address', command: 'curl 169.254.169.254' },
    { name: 'gopher to redis', command: 'curl gopher://127.0.0.1:6379/_FLUSHALL' },
    { name: 'chained segment', command: 'echo ok && curl http://192.168.1.1/cgi-bin/' },
    { name: 'option=value form', command: 'http --url=http://172.17.0.1:2375/containers/json' },
    { name: 'localhost without scheme', command: 'nc localhost:22' },
  ])('blocks $name', ({ command }) => {
    const result = checkCommandUrls(command);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.reason).toMatch(/^Command blocked by network guard: it targets /);
      expect(result.reason).toContain('hard security boundary');
    }
  });

  it.each([
    'curl -s https://example.com/api',
    'git clone https://github.com/HKUDS/nanobot.git',
    'echo version 1.2.3',
    'npm install left-pad@1.3.0',
    'ls -la /tmp',
    'curl https://93.184.216.34/',
  ])('allows %s', (command) => {
    expect(checkCommandUrls(command)).toEqual({ ok: true });
  });

  it('names the URL and the reason', () => {
    expect(findBlockedUrlsInText('curl http://169.254.169.254/latest/ && curl http://10.0.0.1/')).toEqual([
      {
        url: 'http://169.254.169.254/latest/',
        reason: '169.254.169.254 is link-local / cloud metadata (169.254.0.0/16)',
      },
      { url: 'http://10.0.0.1/', reason: '10.0.0.1 is private network (10.0.0.0/8)' },
    ]);
  });

  it('honours the whitelist of the policy it is given', () => {
    const policy = createNetworkPolicy({ whitelist: ['127.0.0.0/8', '100.64.0.0/10'] });
    expect(checkCommandUrls('curl http://localhost:3000/ http://100.101.102.103/', policy)).toEqual({ ok: true });
    expect(checkCommandUrls('curl http://169.254.169.254/', policy).ok).toBe(false);
  });
});
