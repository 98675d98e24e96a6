/**
 * Checks that an activity posted to the messaging endpoint comes from Bot Framework (its "Authenticate requests from
 * the Bot Connector service" rules): a `Bearer` JWT signed RS256 by a key of Bot Framework's OpenID metadata
 * (jwks_uri), issued by the metadata's issuer (https://api.botframework.com), for this bot (aud = appId), not expired
 * (5 minutes of clock skew), its key endorsed for the activity's channel, and its `serviceurl` claim equal to the
 * activity's serviceUrl, so a signed token cannot carry a forged reply address. jose does the cryptography; this
 * file fetches and caches the key set (an unknown key id refetches it, at most every few minutes, so forged key ids
 * cannot make the bot hammer Microsoft) and says in words why a token was refused.
 */
import type * as Jose from 'jose';
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { errorMessage } from '../../util/errors.js';

type JoseApi = Pick<typeof Jose, 'jwtVerify' | 'createLocalJWKSet' | 'decodeProtectedHeader'>;

/** Bot Framework's tokens are a little over 1 KB; anything much larger is not one. */
const MAX_TOKEN_CHARS = 8_192;
const KEYS_TTL_MS = 60 * 60_000;
/** An unknown key id refetches the keys at most this often. */
const FORCED_REFRESH_MS = 5 * 60_000;
const RETRY_AFTER_FAILURE_MS = 60_000;
const CLOCK_SKEW_S = 300;
const FETCH_TIMEOUT_MS = 10_000;

const Metadata = z.looseObject({
  issuer: z.string().min(1),
  jwks_uri: z.string().min(1),
  id_token_signing_alg_values_supported: z.array(z.string()).optional(),
});
const SigningKey = z.looseObject({
  kty: z.string(),
  kid: z.string().optional(),
  endorsements: z.array(z.string()).optional(),
});
const KeySet = z.looseObject({ keys: z.array(z.unknown()).max(200) });
type SigningKey = z.infer<typeof SigningKey>;

/** The token does not prove the request comes from Bot Framework: answered 401, and no turn runs. */
export class AuthRefused extends Error {}
/** Bot Framework's keys could not be fetched, so no token can be checked now: answered 503 (it retries). */
export class AuthUnavailable extends Error {}

export interface BotFrameworkAuthOptions {
  jose: JoseApi;
  appId: string;
  openIdMetadataUrl: string;
  fetch?: typeof fetch;
  now?: () => number;
}

interface Keys {
  issuer: string;
  keys: SigningKey[];
  fetchedAt: number;
}

export class BotFrameworkAuth {
  private cached?: Keys;
  private pending?: Promise<Keys>;
  private lastForcedRefresh = Number.NEGATIVE_INFINITY;
  private readonly fetch: typeof fetch;
  private readonly now: () => number;

  constructor(private readonly options: BotFrameworkAuthOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
    this.now = options.now ?? Date.now;
  }

  /** Fetches the metadata and keys now (at connect), so a wrong URL shows at start rather than at the first message. */
  async prime(): Promise<{ issuer: string }> {
    return { issuer: (await this.keys()).issuer };
  }

  /** The verified claims; throws AuthRefused (401) or AuthUnavailable (503). */
  async verify(
    authorization: string | undefined,
    activity: { serviceUrl: string; channelId: string },
  ): Promise<Jose.JWTPayload> {
    const token = bearerToken(authorization);
    let header: Jose.ProtectedHeaderParameters;
    try {
      header = this.options.jose.decodeProtectedHeader(token);
    } catch {
      throw new AuthRefused('the bearer token is not a JWT');
    }
    if (header.alg !== 'RS256') throw new AuthRefused(`the token is signed with ${header.alg ?? 'nothing'}, not RS256`);
    const kid = header.kid;
    if (typeof kid !== 'string' || kid === '') throw new AuthRefused('the token names no signing key (kid)');
    let keys = await this.keys();
    let key = keys.keys.find((candidate) => candidate.kid === kid);
    if (!key && this.now() - this.lastForcedRefresh >= FORCED_REFRESH_MS) {
      this.lastForcedRefresh = this.now();
      keys = await this.keys(true);
      key = keys.keys.find((candidate) => candidate.kid === kid);
    }
    if (!key)
      throw new AuthRefused(`the token is signed with key ${JSON.stringify(kid)}, which Bot Framework does not list`);
    if (key.endorsements && !key.endorsements.includes(activity.channelId)) {
      throw new AuthRefused(`the signing key is not endorsed for channel ${JSON.stringify(activity.channelId)}`);
    }
    let payload: Jose.JWTPayload;
    try {
      ({ payload } = await this.options.jose.jwtVerify(
        token,
        this.options.jose.createLocalJWKSet({ keys: [key as Jose.JWK] }),
        {
          issuer: keys.issuer,
          audience: this.options.appId,
          algorithms: ['RS256'],
          clockTolerance: CLOCK_SKEW_S,
          requiredClaims: ['exp'],
          currentDate: new Date(this.now()),
        },
      ));
    } catch (err) {
      throw new AuthRefused(describeJoseError(err, keys.issuer));
    }
    const claim = payload.serviceurl ?? payload.serviceUrl;
    if (typeof claim !== 'string') throw new AuthRefused('the token has no serviceurl claim');
    if (claim !== activity.serviceUrl) {
      throw new AuthRefused("the token's serviceurl claim does not match the activity's serviceUrl");
    }
    return payload;
  }

  private keys(force = false): Promise<Keys> {
    const cached = this.cached;
    if (!force && cached && this.now() - cached.fetchedAt < KEYS_TTL_MS) return Promise.resolve(cached);
    this.pending ??= this.download()
      .then((keys) => {
        this.cached = keys;
        return keys;
      })
      .catch((err: unknown) => {
        // A key set that could not be refreshed is still better than none (Bot Framework rotates keys slowly);
        // the next try is a minute away, so an outage at Microsoft is not met with a request per activity.
        if (cached) {
          this.cached = { ...cached, fetchedAt: this.now() - KEYS_TTL_MS + RETRY_AFTER_FAILURE_MS };
          return cached;
        }
        throw new AuthUnavailable(`cannot fetch Bot Framework's signing keys: ${errorMessage(err)}`);
      })
      .finally(() => {
        this.pending = undefined;
      });
    return this.pending;
  }

  private async download(): Promise<Keys> {
    const metadata = Metadata.parse(await this.getJson(this.options.openIdMetadataUrl, 'the OpenID metadata'));
    const jwksUrl = checkSecureUrl(metadata.jwks_uri);
    if ('error' in jwksUrl) throw new Error(`the OpenID metadata's jwks_uri ${jwksUrl.error}`);
    const algorithms = metadata.id_token_signing_alg_values_supported;
    if (algorithms && !algorithms.includes('RS256')) throw new Error('the OpenID metadata does not offer RS256');
    const set = KeySet.parse(await this.getJson(jwksUrl.url.href, 'the signing keys'));
    const keys = set.keys.flatMap((raw) => {
      const key = SigningKey.safeParse(raw);
      return key.success && key.data.kty === 'RSA' && key.data.kid ? [key.data] : [];
    });
    return { issuer: metadata.issuer, keys, fetchedAt: this.now() };
  }

  private async getJson(url: string, what: string): Promise<unknown> {
    const response = await this.fetch(url, { redirect: 'error', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (!response.ok) throw new Error(`${what} at ${new URL(url).host} answered HTTP ${response.status}`);
    return response.json();
  }
}

function bearerToken(authorization: string | undefined): string {
  const parts = (authorization ?? '').trim().split(/\s+/);
  if (parts.length !== 2 || parts[0]?.toLowerCase() !== 'bearer' || !parts[1]) {
    throw new AuthRefused(
      authorization ? 'the Authorization header is not "Bearer <token>"' : 'no Authorization header',
    );
  }
  if (parts[1].length > MAX_TOKEN_CHARS)
    throw new AuthRefused('the bearer token is too long to be a Bot Framework token');
  return parts[1];
}

/** jose's failure in words (its errors carry a stable `code`, and `claim` for claim checks). */
function describeJoseError(err: unknown, issuer: string): string {
  const { code, claim } = (err ?? {}) as { code?: string; claim?: string };
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return 'the token has expired';
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'the token’s signature does not verify';
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'the token is not signed with RS256';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (claim === 'aud') return 'the token is for another bot (aud is not this appId)';
      if (claim === 'iss') return `the token was not issued by ${issuer}`;
      if (claim === 'nbf') return 'the token is not valid yet';
      return `the token's ${claim ?? 'claims'} claim is not acceptable`;
    default:
      return `the token is not valid (${code ?? errorMessage(err)})`;
  }
}
