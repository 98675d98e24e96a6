import { describe, expect, it } from 'vitest';
import { applyCors, authorize, type GateRequest, refuseForeignCallers, requireJson } from '../../src/api/gate.js';
import { HttpError } from '../../src/api/http.js';
import { AuthLimiter } from '../../src/security/auth-limiter.js';

function req(headers: Record<string, string>, method = 'GET', remoteAddress = '127.0.0.1'): GateRequest {
  return { headers, method, socket: { remoteAddress } } as GateRequest;
}

/** The HTTP status a gate check refuses with, or 'pass'. */
function decision(check: () => void): number | 'pass' {
  try {
    check();
    return 'pass';
  } catch (err) {
    if (err instanceof HttpError) return err.status;
    throw err;
  }
}

describe('refuseForeignCallers: Host and Origin decisions', () => {
  const cases: [string, Record<string, string>, string[], number | 'pass'][] = [
    ['loopback Host', { host: '127.0.0.1:8900' }, [], 'pass'],
    ['localhost Host', { host: 'localhost:8900' }, [], 'pass'],
    ['IPv6 loopback Host', { host: '[::1]:8900' }, [], 'pass'],
    ['rebound DNS name', { host: 'evil.example:8900' }, [], 421],
    ['no Host header', {}, [], 421],
    ['proxy origin listed in corsOrigins', { host: 'proxy.example' }, ['https://proxy.example'], 'pass'],
    ['foreign page Origin', { host: '127.0.0.1:8900', origin: 'https://evil.example' }, [], 403],
    ['null Origin', { host: '127.0.0.1:8900', origin: 'null' }, [], 403],
    ['allowed Origin', { host: '127.0.0.1:8900', origin: 'https://app.example' }, ['https://app.example'], 'pass'],
    ['any Origin with *', { host: '127.0.0.1:8900', origin: 'https://x.example' }, ['*'], 'pass'],
  ];
  for (const [name, headers, cors, expected] of cases) {
    it(`${name} → ${expected}`, () => {
      expect(decision(() => refuseForeignCallers(req(headers), '127.0.0.1', cors))).toBe(expected);
    });
  }
});

describe('authorize: API key and wrong-key limiter decisions', () => {
  it('no key configured: everyone passes', () => {
    expect(decision(() => authorize(req({}), null, new AuthLimiter()))).toBe('pass');
    expect(decision(() => authorize(req({}), undefined, new AuthLimiter()))).toBe('pass');
  });

  const cases: [string, string | undefined, number | 'pass'][] = [
    ['right key', 'Bearer sk-right', 'pass'],
    ['right key, lower-case scheme, extra space', 'bearer   sk-right', 'pass'],
    ['wrong key', 'Bearer sk-wrong', 401],
    ['key without scheme', 'sk-right', 401],
    ['Basic scheme', 'Basic sk-right', 401],
    ['prefix of the key', 'Bearer sk-righ', 401],
    ['no header', undefined, 401],
  ];
  for (const [name, header, expected] of cases) {
    it(`${name} → ${expected}`, () => {
      const headers: Record<string, string> = header === undefined ? {} : { authorization: header };
      expect(decision(() => authorize(req(headers), 'sk-right', new AuthLimiter()))).toBe(expected);
    });
  }

  it('after maxFailures wrong keys the address gets 429 with Retry-After, even with the right key; others do not', () => {
    let now = 0;
    const limiter = new AuthLimiter({ maxFailures: 2, windowMs: 60_000, now: () => now });
    const wrong = req({ authorization: 'Bearer nope' }, 'GET', '10.0.0.5');
    expect(decision(() => authorize(wrong, 'sk-right', limiter))).toBe(401);
    expect(decision(() => authorize(wrong, 'sk-right', limiter))).toBe(401);
    const right = req({ authorization: 'Bearer sk-right' }, 'GET', '10.0.0.5');
    let refusal: HttpError | undefined;
    try {
      authorize(right, 'sk-right', limiter);
    } catch (err) {
      refusal = err as HttpError;
    }
    expect(refusal?.status).toBe(429);
    expect(refusal?.retryAfterS).toBeGreaterThan(0);
    const other = req({ authorization: 'Bearer sk-right' }, 'GET', '10.0.0.6');
    expect(decision(() => authorize(other, 'sk-right', limiter))).toBe('pass');
    now = 61_000;
    expect(decision(() => authorize(right, 'sk-right', limiter))).toBe('pass');
  });
});

describe('requireJson: content-type decisions', () => {
  const cases: [string | undefined, number | 'pass'][] = [
    ['application/json', 'pass'],
    ['Application/JSON; charset=UTF-8', 'pass'],
    ['application/json; charset="utf8"', 'pass'],
    ['application/json; charset=latin1', 415],
    ['text/plain', 415],
    ['application/x-www-form-urlencoded', 415],
    ['multipart/form-data; boundary=x', 415],
    ['application/jsonx', 415],
    [undefined, 415],
  ];
  for (const [type, expected] of cases) {
    it(`${String(type)} → ${expected}`, () => {
      const headers: Record<string, string> = type === undefined ? {} : { 'content-type': type };
      expect(decision(() => requireJson(req(headers, 'POST')))).toBe(expected);
    });
  }
});

describe('applyCors', () => {
  function fakeRes() {
    const headers: Record<string, string> = {};
    const state = { status: 0, ended: false };
    const res = {
      setHeader(name: string, value: string) {
        headers[name] = value;
        return res;
      },
      writeHead(status: number) {
        state.status = status;
        return { end: () => (state.ended = true) };
      },
    };
    return { res: res as unknown as Parameters<typeof applyCors>[1], headers, state };
  }

  it('an allowed origin gets its own origin back (or * when configured), a foreign one nothing', () => {
    const allowed = fakeRes();
    expect(applyCors(req({ origin: 'https://app.example' }), allowed.res, ['https://app.example'])).toBe(false);
    expect(allowed.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(allowed.headers.vary).toBe('Origin');
    const star = fakeRes();
    applyCors(req({ origin: 'https://x.example' }), star.res, ['*']);
    expect(star.headers['access-control-allow-origin']).toBe('*');
    const foreign = fakeRes();
    applyCors(req({ origin: 'https://evil.example' }), foreign.res, ['https://app.example']);
    expect(foreign.headers).toEqual({});
  });

  it('answers a preflight: 204 with methods for an allowed origin, 403 otherwise', () => {
    const ok = fakeRes();
    expect(applyCors(req({ origin: 'https://app.example' }, 'OPTIONS'), ok.res, ['https://app.example'])).toBe(true);
    expect(ok.state).toEqual({ status: 204, ended: true });
    expect(ok.headers['access-control-allow-methods']).toBe('GET, POST, OPTIONS');
    const refused = fakeRes();
    expect(applyCors(req({ origin: 'https://evil.example' }, 'OPTIONS'), refused.res, [])).toBe(true);
    expect(refused.state).toEqual({ status: 403, ended: true });
    expect(refused.headers['access-control-allow-methods']).toBeUndefined();
  });
});
