/** The one loopback/host policy (src/security/hosts.ts): one table per question, many spellings each. */
import { describe, expect, it } from 'vitest';
import {
  canonicalOrigin,
  checkSecureUrl,
  hostHeaderAllowed,
  isLoopbackHost,
  originAllowed,
} from '../../src/security/hosts.js';

const LOOPBACK = [
  'localhost',
  'LOCALHOST',
  'LocalHost',
  '127.0.0.1',
  '127.0.0.2',
  '127.255.255.254',
  '127.1',
  '2130706433',
  '0x7f.1',
  '0177.0.0.1',
  '::1',
  '[::1]',
  '0:0:0:0:0:0:0:1',
  '[0:0:0:0:0:0:0:1]',
  '::ffff:127.0.0.1',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '::FFFF:127.9.8.7',
];

const NOT_LOOPBACK = [
  '',
  ' 127.0.0.1',
  '127.0.0.1 ',
  '127.0.0.1\t',
  '\n127.0.0.1',
  'localhost ',
  ' localhost',
  'localhost.',
  'foo.localhost',
  'localhost.evil',
  'localhost.evil.example',
  '127.0.0.1.evil.example',
  'evil.example',
  '0.0.0.0',
  '::',
  '[::]',
  '10.0.0.1',
  '128.0.0.1',
  '126.255.255.255',
  '::2',
  '::ffff:10.0.0.1',
  '::ffff:128.0.0.1',
  '127.0.0.1:8900',
  'localhost:80',
  '[::1]:80',
  '[::1',
  '::1]',
  '127.0.0.1%2e',
  '%6cocalhost',
  'local_host',
  '127.0.0.1@evil.example',
  'evil.example@127.0.0.1',
  '127.0.0.1/evil',
  '127.0.0.1#x',
  'ｌｏｃａｌｈｏｓｔ',
  '127.0.0.256',
  '1.2.3.4.5',
];

describe('isLoopbackHost', () => {
  it.each(LOOPBACK)('%j is loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });
  it.each(NOT_LOOPBACK)('%j is not loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
});

describe('hostHeaderAllowed (bound to loopback)', () => {
  const bound = { bindHost: '127.0.0.1' };
  it.each([
    '127.0.0.1',
    '127.0.0.1:8900',
    'localhost:8900',
    'LOCALHOST:8900',
    '[::1]:8900',
    '[::1]',
    '127.1:8900',
    '2130706433:8900',
    '[::ffff:127.0.0.1]:8900',
    '[0:0:0:0:0:0:0:1]:8900',
  ])('Host %j is accepted', (header) => {
    expect(hostHeaderAllowed(header, bound)).toBe(true);
  });
  it.each([
    undefined,
    '',
    ' ',
    'evil.example',
    'evil.example:8900',
    '127.0.0.1.evil.example',
    '127.0.0.1.evil.example:8900',
    'localhost.evil',
    'localhost.evil:8900',
    'localhost.',
    'foo.localhost:8900',
    '127.0.0.1@evil.example',
    'evil.example@127.0.0.1',
    '127.0.0.1:8900@evil.example',
    '127.0.0.1:99999',
    '127.0.0.1:abc',
    '127.0.0.1 evil.example',
    '[::1].evil.example',
    '127.0.0.1/evil',
    '127.0.0.1%2eevil.example',
    'ｌｏｃａｌｈｏｓｔ',
  ])('Host %j is refused', (header) => {
    expect(hostHeaderAllowed(header, bound)).toBe(false);
  });
  it('accepts a name the config allows (a reverse proxy), case-insensitively, with its port', () => {
    const options = { bindHost: 'localhost', alsoAllowed: ['proxy.example', 'other.example:8443'] };
    expect(hostHeaderAllowed('PROXY.example', options)).toBe(true);
    expect(hostHeaderAllowed('other.example:8443', options)).toBe(true);
    expect(hostHeaderAllowed('other.example', options)).toBe(false);
    expect(hostHeaderAllowed('proxy.example.evil', options)).toBe(false);
  });
  it('accepts any Host when bound beyond loopback (a key or token guards it)', () => {
    expect(hostHeaderAllowed('nanobot.example', { bindHost: '0.0.0.0' })).toBe(true);
    expect(hostHeaderAllowed('nanobot.example', { bindHost: ' 127.0.0.1' })).toBe(true);
  });
});

describe('originAllowed', () => {
  const allowed = ['https://app.example', 'http://localhost:5173'];
  it.each([
    [undefined, 'no Origin: not a browser'],
    ['https://app.example', 'listed'],
    ['https://APP.EXAMPLE', 'listed, other case'],
    ['https://app.example:443', 'listed, default port spelled out'],
    ['http://localhost:5173', 'listed with a port'],
    ['http://LOCALHOST:5173', 'listed with a port, other case'],
    ['https://app.example/', 'listed, with the empty path'],
  ])('%j is allowed (%s)', (origin, _why) => {
    expect(originAllowed(origin, { allowed })).toBe(true);
  });
  it.each([
    'null',
    'NULL',
    '',
    ' ',
    'https://evil.example',
    'http://app.example',
    'https://app.example:8443',
    'https://app.example.evil.example',
    'https://evil.app.example',
    'https://app.example@evil.example',
    'https://evil.example#https://app.example',
    'https://app.example/path',
    'http://localhost:5174',
    'http://localhost',
    'http://127.0.0.1:5173',
    'file://',
    'chrome-extension://abcdef',
    'https://app.example, https://evil.example',
    ' https://app.example',
  ])('%j is refused', (origin) => {
    expect(originAllowed(origin, { allowed })).toBe(false);
  });
  it('allows the server’s own origin only when asked to (a server that serves its own pages)', () => {
    expect(originAllowed('http://127.0.0.1:8765', { allowed: [], ownHost: '127.0.0.1:8765' })).toBe(true);
    expect(originAllowed('http://127.0.0.1:8765', { allowed: [] })).toBe(false);
    expect(originAllowed('http://127.0.0.1:9999', { allowed: [], ownHost: '127.0.0.1:8765' })).toBe(false);
    expect(originAllowed('http://evil.example:8765', { allowed: [], ownHost: '127.0.0.1:8765' })).toBe(false);
  });
  it('`*` allows every origin, null included', () => {
    expect(originAllowed('null', { allowed: ['*'] })).toBe(true);
    expect(originAllowed('https://evil.example', { allowed: ['*'] })).toBe(true);
  });
  it('canonicalOrigin', () => {
    expect(canonicalOrigin('HTTPS://App.Example:443')).toBe('https://app.example');
    expect(canonicalOrigin('http://[::1]:8900')).toBe('http://[::1]:8900');
    expect(canonicalOrigin('null')).toBeUndefined();
    expect(canonicalOrigin('ftp://x.example')).toBeUndefined();
  });
});

describe('checkSecureUrl (https unless loopback)', () => {
  it.each([
    'https://api.telegram.org',
    'https://matrix.example.org:8448/',
    'http://127.0.0.1:8081',
    'http://localhost:3000/api',
    'http://LOCALHOST:3000',
    'http://[::1]:8008',
    'http://127.0.0.5',
    'http://127.1:9000',
  ])('%j is accepted', (url) => {
    expect('url' in checkSecureUrl(url)).toBe(true);
  });
  it.each([
    ['http://api.telegram.org', /must be an https:\/\/ URL/],
    ['http://127.0.0.1.evil.example', /must be an https/],
    ['http://localhost.evil', /must be an https/],
    ['http://foo.localhost', /must be an https/],
    ['http://localhost@evil.example', /must be an https/],
    ['http://10.0.0.1', /must be an https/],
    ['http://0.0.0.0:8080', /must be an https/],
    ['ws://127.0.0.1', /must be an https/],
    ['file:///etc/passwd', /must be an https/],
    ['ftp://localhost', /must be an https/],
    [' http://127.0.0.1', /whitespace/],
    ['http://127.0.0.1\t', /whitespace/],
    ['not a url', /whitespace/],
    ['localhost:8080', /must be an https/],
    ['//127.0.0.1', /is not a URL/],
  ])('%j is refused', (url, reason) => {
    const checked = checkSecureUrl(url);
    expect('error' in checked && checked.error).toMatch(reason);
  });
});
