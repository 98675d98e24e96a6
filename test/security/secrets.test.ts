/** Secret comparison, redaction of shown errors, and the failed-auth limiter (src/security/). */
import { describe, expect, it } from 'vitest';
import { AuthLimiter } from '../../src/security/auth-limiter.js';
import { collectSecrets, redactingLogger, redactSecrets, secretMatches } from '../../src/security/secrets.js';

describe('secretMatches', () => {
  const key = 'sk-nanobot-0123456789abcdef';
  it('matches only the exact value', () => {
    expect(secretMatches(key, key)).toBe(true);
    for (const wrong of [
      undefined,
      null,
      '',
      'sk-',
      key.slice(0, -1),
      `${key}0`,
      `${key} `,
      ` ${key}`,
      key.toUpperCase(),
      key.replace('0', 'O'),
      'x'.repeat(key.length),
      key + key,
    ]) {
      expect(secretMatches(key, wrong), String(wrong)).toBe(false);
    }
  });
  it('an empty expected secret matches nothing, not even an empty value', () => {
    expect(secretMatches('', '')).toBe(false);
    expect(secretMatches('', undefined)).toBe(false);
  });
  it('is not a length or prefix comparison (inputs of any length go through the same hash)', () => {
    // Lengths that differ used to return early; now any length is compared, without throwing.
    expect(() => secretMatches(key, 'x'.repeat(100_000))).not.toThrow();
    expect(secretMatches('ünï©ødé-secret', 'ünï©ødé-secret')).toBe(true);
  });
});

describe('redactSecrets', () => {
  const token = '123456789:AAFakeTokenFakeTokenFakeTokenFake12';
  const shapes: [string, string, string[]][] = [
    [
      'node-fetch (grammy) network failure',
      `request to https://api.telegram.org/bot${token}/getMe failed, reason: connect ECONNREFUSED 127.0.0.1:443`,
      [token, 'AAFakeToken'],
    ],
    ['grammy error echoing the path', `Call to 'getMe' failed! (500: upstream error at /bot${token}/getMe)`, [token]],
    ['telegram file URL', `file download failed: https://api.telegram.org/file/bot${token}/photos/file_1.jpg`, [token]],
    ['bare bot token', `token ${token} was revoked`, [token]],
    [
      'query parameter token',
      'GET https://hooks.example/notify?token=abcdef0123456789&x=1 failed: 401',
      ['abcdef0123456789'],
    ],
    [
      'access_token / api_key / key query parameters',
      'https://graph.example/v1?access_token=EAAB123456789xyz&api_key=k123456789&key=AIzaSyA-123456789',
      ['EAAB123456789xyz', 'k123456789', 'AIzaSyA-123456789'],
    ],
    [
      'Bearer header echoed',
      'request failed: {"headers":{"Authorization":"Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig"}}',
      ['eyJhbGciOiJIUzI1NiJ9'],
    ],
    [
      'Basic credentials',
      'proxy answered 407 for Authorization: Basic YWdlbnQ6aHVudGVyMi1zZWNyZXQ=',
      ['YWdlbnQ6aHVudGVy'],
    ],
    ['Discord Bot header', 'Authorization: Bot MTEyMzQ1Njc4OTAxMjM0NTY3OA.GhIjKl.abcdefghijklmnop', ['MTEyMzQ1Njc4']],
    ['URL with a password', 'connect to https://agent:hunter2-secret@imap.example.com failed', ['hunter2-secret']],
    ['Slack token', 'slack said invalid_auth for xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp', ['1234567890-0987']],
    ['OpenAI key', 'Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz0123', ['abcdefghijklmnop']],
  ];
  it.each(shapes)('%s', (_name, text, leaked) => {
    const shown = redactSecrets(text);
    for (const secret of leaked) expect(shown).not.toContain(secret);
    expect(shown).toContain('<redacted>');
  });

  it('masks configured secret values wherever they appear, raw and URL-encoded', () => {
    const secrets = ['plain-app-secret-42', 'p@ss word/+1'];
    const text =
      'feishu: app secret plain-app-secret-42 rejected; imap login p@ss word/+1 failed; ' +
      `url https://x.example/?s=${encodeURIComponent('p@ss word/+1')}`;
    const shown = redactSecrets(text, secrets);
    expect(shown).not.toContain('plain-app-secret-42');
    expect(shown).not.toContain('p@ss word/+1');
    expect(shown).not.toContain(encodeURIComponent('p@ss word/+1'));
  });

  it('leaves ordinary error text alone', () => {
    for (const text of [
      'Telegram answered 409 Conflict: another program is already receiving updates for this bot token',
      'cannot reach Telegram: Network request for getMe failed!',
      'channels.telegram.token is not set. The Bot token is part of every request URL.',
      'connect ECONNREFUSED 127.0.0.1:8081',
      'the token expired yesterday; Token refresh failed, bearer rejected',
      'GET /v1/chat/completions?max_tokens=100 took 2 s',
    ]) {
      expect(redactSecrets(text, ['k'])).toBe(text);
    }
  });
});

describe('redactingLogger', () => {
  it('masks configured secrets and secret shapes on every level', () => {
    const lines: string[] = [];
    const sink = (m: string) => lines.push(m);
    const log = redactingLogger({ debug: sink, info: sink, warn: sink, error: sink }, () => ['feishu-app-secret-1']);
    log.debug('debug feishu-app-secret-1');
    log.info('GET https://api.telegram.org/bot123456:AAAAAAAAAAAAAAAAAAAAAAAA/getMe');
    log.warn('warn Authorization: Bearer abcdefgh12345');
    log.error('error ?access_token=zzzzzzzz');
    expect(lines.join('\n')).not.toMatch(/feishu-app-secret-1|AAAAAAAA|abcdefgh12345|zzzzzzzz/);
    expect(lines).toHaveLength(4);
  });
});

describe('collectSecrets', () => {
  it('finds every secret-looking value in a config, at any depth', () => {
    const config = {
      providers: { openai: { apiKey: 'sk-live-abcdef123456', apiBase: 'https://api.openai.com/v1' } },
      channels: {
        telegram: { enabled: true, token: '123:telegram-token-value', allowFrom: ['12345678'] },
        feishu: { appId: 'cli_a1', appSecret: 'feishu-secret-value', encryptKey: 'feishu-encrypt-key' },
        email: { imapPassword: 'imap-password-value', smtpHost: 'smtp.example.com' },
        websocket: { token: '' },
      },
      api: { apiKey: 'api-key-value-123' },
      tools: {
        mcpServers: {
          gh: { env: { GITHUB_TOKEN: 'ghp_envtokenvalue' }, headers: { Authorization: 'Bearer h-value-1' } },
        },
      },
      agents: { defaults: { maxTokens: 8192, model: 'gpt-5' } },
    };
    expect(collectSecrets(config).sort()).toEqual(
      [
        'sk-live-abcdef123456',
        '123:telegram-token-value',
        'feishu-secret-value',
        'feishu-encrypt-key',
        'imap-password-value',
        'api-key-value-123',
        'ghp_envtokenvalue',
        'Bearer h-value-1',
      ].sort(),
    );
  });
});

describe('AuthLimiter', () => {
  it('refuses an address after N failures in the window, until the window ends', () => {
    let now = 1_000_000;
    const limiter = new AuthLimiter({ maxFailures: 3, windowMs: 60_000, now: () => now });
    for (let i = 0; i < 3; i += 1) {
      expect(limiter.retryAfterS('10.0.0.1')).toBe(0);
      limiter.recordFailure('10.0.0.1');
    }
    expect(limiter.retryAfterS('10.0.0.1')).toBe(60);
    expect(limiter.retryAfterS('::ffff:10.0.0.1')).toBe(60);
    expect(limiter.retryAfterS('10.0.0.2')).toBe(0);
    now += 59_500;
    expect(limiter.retryAfterS('10.0.0.1')).toBe(1);
    now += 500;
    expect(limiter.retryAfterS('10.0.0.1')).toBe(0);
  });

  it('remembers at most maxTracked addresses (a flood of addresses cannot grow memory)', () => {
    let now = 0;
    const limiter = new AuthLimiter({ maxFailures: 2, windowMs: 1_000, maxTracked: 100, now: () => now });
    for (let i = 0; i < 10_000; i += 1) {
      limiter.recordFailure(`10.1.${i >> 8}.${i & 255}`);
      if (i % 1000 === 0) now += 10;
    }
    expect(limiter.size).toBeLessThanOrEqual(100);
    // The newest address is still limited after its second failure.
    limiter.recordFailure('10.1.39.15');
    expect(limiter.retryAfterS('10.1.39.15')).toBeGreaterThan(0);
  });
});
