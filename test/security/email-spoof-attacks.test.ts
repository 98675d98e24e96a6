/**
 * Email sender spoofing: Authentication-Results headers a sender writes themselves (above, below or instead of the
 * server's), passes for another domain than From, and parser tricks (comments, quotes, encoded words, duplicates).
 * Only the receiving server's header counts, and only a DMARC pass for From or an aligned DKIM/SPF pass. The last
 * part drives the real email channel (dovecot + the in-process MX of mail-world.ts) with spoofed mail.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { aligned, authenticationVerdict, parseAuthenticationResults } from '../../src/channels/email/authentication.js';
import { emailChannel } from '../../src/channels/email/index.js';
import { parseHeaders } from '../../src/channels/email/message.js';
import { normalizeKeys } from '../../src/config/keys.js';
import { eventually } from '../channels/contract.js';
import { DOVECOT } from '../channels/email/dovecot.js';
import { botFolder, OWNER, startEmailGateway, userTurns } from '../channels/email/helpers.js';
import { sharedDovecot, startMailWorld, stopSharedDovecot } from '../channels/email/mail-world.js';

const FROM = 'alice@example.com';
const MX = 'mx.receiver.example';
const PASS = `${MX}; spf=pass smtp.mailfrom=alice@example.com; dkim=pass header.d=example.com; dmarc=pass header.from=example.com`;
const BOTH = { spf: true, dkim: true };
const topmost = { trustedAuthservIds: [], ...BOTH };
const pinned = { trustedAuthservIds: [MX], ...BOTH };

/** Header lists (topmost first) that must be refused, with and without a configured authserv-id. */
const SPOOFS: [string, string[]][] = [
  ['no header at all', []],
  ['server says fail, sender’s pass below', [`${MX}; spf=fail smtp.mailfrom=alice@example.com; dkim=none`, PASS]],
  ['server says none, sender’s pass below', [`${MX}; none`, PASS]],
  ['server header without results, pass below', [MX, PASS]],
  [
    'pass for the attacker’s own domain',
    [`${MX}; spf=pass smtp.mailfrom=mallory@evil.test; dkim=pass header.d=evil.test`],
  ],
  ['dmarc pass for another From domain', [`${MX}; dmarc=pass header.from=evil.test`]],
  ['dmarc pass without header.from', [`${MX}; dmarc=pass`]],
  ['dmarc pass for a subdomain of From', [`${MX}; dmarc=pass header.from=mail.example.com`]],
  ['dkim pass, d= look-alike evil-example.com', [`${MX}; dkim=pass header.d=evil-example.com`]],
  ['dkim pass, d= example.com.evil.com', [`${MX}; dkim=pass header.d=example.com.evil.com`]],
  ['dkim pass, d= notexample.com', [`${MX}; dkim=pass header.d=notexample.com`]],
  ['dkim pass, d= the TLD', [`${MX}; dkim=pass header.d=com`]],
  ['dkim pass, d= an address', [`${MX}; dkim=pass header.d=mallory@example.com`]],
  ['dkim pass, d= unaligned but i= aligned', [`${MX}; dkim=pass header.d=evil.test header.i=@example.com`]],
  ['dkim pass, d= IDN look-alike', [`${MX}; dkim=pass header.d=exаmple.com`]],
  ['spf pass, mailfrom look-alike', [`${MX}; spf=pass smtp.mailfrom=alice@example.com.evil.test`]],
  ['spf pass, mailfrom quoted local part', [`${MX}; spf=pass smtp.mailfrom="alice@example.com"@evil.test`]],
  ['spf pass for HELO only', [`${MX}; spf=pass smtp.helo=example.com`]],
  ['spf pass, two mailfrom values', [`${MX}; spf=pass smtp.mailfrom=evil.test smtp.mailfrom=example.com`]],
  ['spf pass, duplicate key in another case', [`${MX}; spf=pass smtp.mailfrom=evil.test SMTP.MailFrom=example.com`]],
  ['dkim pass, header.d written twice', [`${MX}; dkim=pass header.d=evil.test header.d=example.com`]],
  ['pass only inside a comment', [`${MX}; spf=fail (spf=pass smtp.mailfrom=example.com) smtp.mailfrom=evil.test`]],
  ['pass only inside a quoted reason', [`${MX}; dkim=fail reason="dkim=pass header.d=example.com"`]],
  [
    'pass inside a nested comment',
    [`${MX}; dmarc=fail (a (dmarc=pass header.from=example.com)) header.from=example.com`],
  ],
  ['unterminated comment hides a fail', [`${MX}; spf=pass smtp.mailfrom=example.com (unterminated`]],
  ['unterminated quote', [`${MX}; dkim=pass header.d=example.com reason="unterminated`]],
  ['quoted value runs into a key', [`${MX}; spf=pass reason="x"smtp.mailfrom=example.com`]],
  ['result written as fail/pass', [`${MX}; spf=fail/pass smtp.mailfrom=example.com`]],
  ['method with a dot', [`${MX}; spf.x=pass smtp.mailfrom=example.com`]],
  ['softfail', [`${MX}; spf=softfail smtp.mailfrom=example.com`]],
  ['neutral', [`${MX}; spf=neutral smtp.mailfrom=example.com; dkim=neutral header.d=example.com`]],
  ['temperror', [`${MX}; dkim=temperror header.d=example.com`]],
  ['policy result only', [`${MX}; dmarc=bestguesspass header.from=example.com`]],
  ['RFC 2047 encoded whole header', [`=?utf-8?b?${Buffer.from(PASS).toString('base64')}?=`]],
  ['RFC 2047 encoded authserv-id', [PASS.replace(MX, `=?utf-8?q?${MX}?=`)]],
  ['a broken clause beside a pass', [`${MX}; garbage; ${PASS.slice(MX.length + 2)}`]],
  ['an extra word after the authserv-id', [`${MX} 1 extra; dmarc=pass header.from=example.com`]],
];

/** Refused only when the server's authserv-id is configured (the topmost header is then someone else's). */
const FOREIGN_TOP: [string, string[]][] = [
  ['a pass from another authserv-id on top', [PASS.replace(MX, 'mx.attacker.example')]],
  ['another authserv-id on top, server’s fail below', [PASS.replace(MX, 'mx.attacker.example'), `${MX}; spf=fail`]],
  ['look-alike authserv-id', [PASS.replace(MX, 'mx.receiver.example.evil.test')]],
  ['authserv-id as a prefix', [PASS.replace(MX, 'mx.receiver')]],
  ['Microsoft-style header without an authserv-id', [PASS.slice(MX.length + 2)]],
];

/** The receiving server's own header, as real servers write it: accepted. */
const LEGITIMATE: [string, string[], Partial<typeof topmost>?][] = [
  ['all three pass', [PASS]],
  ['server pass on top, sender’s fail below', [PASS, `${MX}; spf=fail; dkim=fail`]],
  [
    'dmarc pass alone (forwarded mail)',
    [`${MX}; spf=fail smtp.mailfrom=list.test; dmarc=pass header.from=example.com`],
  ],
  ['dkim pass, d= exact', [`${MX}; dkim=pass header.d=example.com`]],
  ['dkim pass, d= a subdomain of From', [`${MX}; dkim=pass header.d=mail.example.com`]],
  ['dkim pass among failing signatures', [`${MX}; dkim=fail header.d=evil.test; dkim=pass header.d=example.com`]],
  ['dkim pass, only i= given', [`${MX}; dkim=pass header.i=@example.com header.s=sel header.b=abc`]],
  ['spf pass, mailfrom aligned', [`${MX}; spf=pass smtp.mailfrom=bounce@mail.example.com`]],
  ['spf pass, mailfrom domain only', [`${MX}; spf=pass smtp.mailfrom=example.com`]],
  ['quoted, versioned authserv-id in caps', [PASS.replace(MX, `"MX.Receiver.Example." 1`)]],
  ['folded (already unfolded) with tabs', [PASS.replaceAll('; ', ';\t ')]],
  ['comments everywhere', [`${MX} (the MX); spf (x) = (y) PASS (z) smtp (a) . mailfrom (b) = (c) alice@example.com`]],
  ['versioned method and a quoted domain', [`${MX}; dkim/1 = pass header.d="EXAMPLE.COM."`]],
  ['trailing semicolon and reason', [`${MX}; dkim=pass reason="good signature" header.d=example.com;`]],
  ['From domain in capitals', [`${MX}; dmarc=pass header.from=Example.COM`]],
];

describe('Authentication-Results: only the receiving server vouches, and only for From', () => {
  it.each(SPOOFS)('refuses %s', (_name, headers) => {
    expect(authenticationVerdict(headers, FROM, topmost).ok).toBe(false);
    expect(authenticationVerdict(headers, FROM, pinned).ok).toBe(false);
  });

  it.each(FOREIGN_TOP)('with trustedAuthservIds, refuses %s', (_name, headers) => {
    expect(authenticationVerdict(headers, FROM, pinned)).toMatchObject({ ok: false });
  });

  it.each(LEGITIMATE)('accepts %s', (_name, headers) => {
    expect(authenticationVerdict(headers, FROM, topmost)).toMatchObject({ ok: true });
    expect(authenticationVerdict(headers, FROM, pinned)).toMatchObject({ ok: true });
  });

  it('with trustedAuthservIds, takes the topmost header of that server below a sender’s header of another id', () => {
    const verdict = authenticationVerdict([PASS.replace(MX, 'mx.attacker.example'), PASS], FROM, pinned);
    expect(verdict.ok).toBe(true);
    const ids = { ...pinned, trustedAuthservIds: ['MX.Receiver.Example.'] };
    expect(authenticationVerdict([PASS], FROM, ids).ok).toBe(true);
  });

  it('accepts what Gmail, Microsoft 365 and rspamd write for a good mail', () => {
    const gmail =
      'mx.google.com; dkim=pass header.i=@example.com header.s=s1 header.b=AbC+/dE=; ' +
      'spf=pass (google.com: domain of alice@example.com designates 192.0.2.1 as permitted sender) ' +
      'smtp.mailfrom=alice@example.com; dmarc=pass (p=NONE sp=NONE dis=NONE) header.from=example.com';
    expect(authenticationVerdict([gmail], FROM, { ...BOTH, trustedAuthservIds: ['mx.google.com'] }).ok).toBe(true);
    const microsoft =
      'spf=pass (sender IP is 192.0.2.1) smtp.mailfrom=example.com; dkim=pass (signature was verified) ' +
      'header.d=example.com;dmarc=pass action=none header.from=example.com;compauth=pass reason=100';
    expect(authenticationVerdict([microsoft], FROM, topmost).ok).toBe(true);
    const rspamd =
      'mail.receiver.example;\tdkim=pass header.d=example.com header.s=dkim header.b=abc;\tspf=pass ' +
      '(mail.receiver.example: domain of "alice@example.com" designates 192.0.2.1 as permitted sender) ' +
      'smtp.mailfrom=alice@example.com';
    expect(authenticationVerdict([rspamd], FROM, topmost).ok).toBe(true);
  });

  it('counts a DKIM or SPF pass only when that check is on; DMARC always', () => {
    const spf = [`${MX}; spf=pass smtp.mailfrom=example.com`];
    const dkim = [`${MX}; dkim=pass header.d=example.com`];
    const dmarc = [`${MX}; dmarc=pass header.from=example.com`];
    const onlySpf = { trustedAuthservIds: [], spf: true, dkim: false };
    const onlyDkim = { trustedAuthservIds: [], spf: false, dkim: true };
    expect(authenticationVerdict(spf, FROM, onlySpf).ok).toBe(true);
    expect(authenticationVerdict(dkim, FROM, onlySpf).ok).toBe(false);
    expect(authenticationVerdict(dkim, FROM, onlyDkim).ok).toBe(true);
    expect(authenticationVerdict(spf, FROM, onlyDkim).ok).toBe(false);
    expect(authenticationVerdict(dmarc, FROM, onlySpf).ok).toBe(true);
  });

  it('refuses a From without a usable domain', () => {
    for (const from of ['alice', 'alice@', 'alice@localhost', 'alice@exa mple.com', ''])
      expect(authenticationVerdict([PASS], from, topmost).ok).toBe(false);
  });

  it('aligns domains of one organisation only', () => {
    const yes = [
      ['example.com', 'example.com'],
      ['mail.example.com', 'example.com'],
      ['example.com', 'mail.example.com'],
      ['a.b.example.com', 'example.com'],
      ['EXAMPLE.com.', 'example.COM'],
      ['bücher.de', 'xn--bcher-kva.de'],
      ['mail.example.co.uk', 'example.co.uk'],
    ];
    const no = [
      ['evil-example.com', 'example.com'],
      ['example.com.evil.com', 'example.com'],
      ['notexample.com', 'example.com'],
      ['example.co', 'example.com'],
      ['com', 'example.com'],
      ['co.uk', 'example.co.uk'],
      ['evil.co.uk', 'example.co.uk'],
      ['a.example.com', 'b.example.com'],
      ['exаmple.com', 'example.com'],
      ['example.com', ''],
      ['', ''],
      ['example..com', 'example.com'],
      ['-example.com', 'example.com'],
    ];
    for (const [a = '', b = ''] of yes) expect([a, b, aligned(a, b)]).toEqual([a, b, true]);
    for (const [a = '', b = ''] of no) expect([a, b, aligned(a, b)]).toEqual([a, b, false]);
  });

  it('reads folded header lines (CRLF + tab/space) of the real mail, topmost first', () => {
    const raw =
      `Authentication-Results: ${MX};\r\n\tspf=pass\r\n   smtp.mailfrom=alice@example.com;\r\n\tdkim=none\r\n` +
      'Authentication-Results: mx.attacker.example; dmarc=pass\r\n header.from=example.com\r\n' +
      'From: alice@example.com\r\n';
    const values = parseHeaders(raw).get('authentication-results') ?? [];
    expect(values).toHaveLength(2);
    expect(authenticationVerdict(values, FROM, pinned)).toEqual({ ok: true, by: 'SPF' });
    expect(authenticationVerdict(values.slice().reverse(), FROM, pinned)).toEqual({ ok: true, by: 'SPF' });
    const failing = raw.replace('spf=pass', 'spf=fail');
    const both = parseHeaders(failing).get('authentication-results') ?? [];
    expect(authenticationVerdict(both, FROM, pinned).ok).toBe(false);
    expect(authenticationVerdict(both, FROM, topmost).ok).toBe(false);
  });

  it('reads the header as RFC 8601 says', () => {
    expect(parseAuthenticationResults(`"${MX}." 1; spf/1 = pass (ok) smtp.mailfrom="a b"@example.com`)).toEqual({
      authservId: MX,
      results: [{ method: 'spf', result: 'pass', props: new Map([['smtp.mailfrom', 'a b@example.com']]) }],
    });
    expect(parseAuthenticationResults(`${MX}; none`)).toEqual({ authservId: MX, results: [] });
    expect(parseAuthenticationResults(`${MX}; spf=pass (unterminated`).results).toBeUndefined();
  });

  it('takes trusted_authserv_ids (snake_case, upstream’s key) and rejects a value that is no authserv-id', () => {
    const ready = {
      consentGranted: true,
      imapHost: 'imap.example.com',
      imapUsername: 'agent@example.com',
      imapPassword: 'x',
      smtpHost: 'smtp.example.com',
      smtpUsername: 'agent@example.com',
      smtpPassword: 'x',
    };
    expect(emailChannel.parse({ ...ready, trustedAuthservIds: [' MX.Google.com. '] }).trustedAuthservIds).toEqual([
      'mx.google.com',
    ]);
    expect(emailChannel.parse(ready).trustedAuthservIds).toEqual([]);
    const snake = normalizeKeys({ ...ready, trusted_authserv_ids: ['mx.example.net'] });
    expect(emailChannel.parse(snake).trustedAuthservIds).toEqual(['mx.example.net']);
    expect(() => emailChannel.parse({ ...ready, trustedAuthservIds: ['mx.google.com; dkim=pass'] })).toThrow(
      /channels\.email\.trustedAuthservIds/,
    );
  });
});

describe.skipIf(!DOVECOT)('spoofed mail through the real email channel (dovecot)', () => {
  afterAll(() => stopSharedDovecot());

  it('answers the owner, and leaves every spoof of the owner unread and unseen by the agent', async () => {
    const world = await startMailWorld();
    const run = await startEmailGateway(
      { allowFrom: [`@${OWNER}`], trustedAuthservIds: [`mx.${world.domain}`] },
      world,
    );
    try {
      const owner = run.world.address(OWNER);
      const domain = run.world.domain;
      const forgedPass = `mx.${domain}; spf=pass smtp.mailfrom=${owner}; dkim=pass header.d=${domain}; dmarc=pass header.from=${domain}`;
      run.llm.enqueue({ text: 'answer for the owner' });
      // Mallory logs in to her own domain and writes the owner's From, with passes of her own written in.
      const spoofs = [
        { from: OWNER, as: 'mallory@evil.test', text: 'spoof 1: plain' },
        { from: OWNER, as: 'mallory@evil.test', text: 'spoof 2', headers: { 'Authentication-Results': forgedPass } },
        { from: OWNER, as: `mallory@${domain}.evil.test`, text: 'spoof 3: look-alike domain' },
        { from: OWNER, as: `mallory@evil-${domain}`, text: 'spoof 4: look-alike domain' },
        { from: `${OWNER}@${domain}.evil.test`, as: `mallory@${domain}.evil.test`, text: 'spoof 5: From look-alike' },
      ];
      for (const spoof of spoofs) await run.world.send(spoof);
      // Two From headers under a pass (the server may have checked the other one).
      await run.world.appendToBot(
        `Authentication-Results: ${forgedPass}\nFrom: ${owner}\nFrom: mallory@evil.test\nTo: ${run.world.bot}\nSubject: s6\nMessage-ID: <s6@x.test>\n\nspoof 6`,
      );
      await run.world.send({ from: OWNER, text: 'the real owner writes' });
      await eventually(() =>
        expect(run.world.mailsTo(OWNER).map((mail) => mail.text)).toEqual(['answer for the owner']),
      );
      expect(run.llm.requests).toHaveLength(1);
      expect(userTurns(run).join('\n')).not.toMatch(/spoof/);
      const folder = await botFolder(await sharedDovecot(), run);
      // Spoofs 1–4 and 6 stay unread for a person to look at; spoof 5 is from a stranger (pairing, handled).
      expect(folder.filter((mail) => !mail.seen)).toHaveLength(5);
    } finally {
      await run.close();
    }
  });
});
