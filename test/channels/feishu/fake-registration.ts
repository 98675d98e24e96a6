/**
 * The fake accounts server's app registration (`POST /oauth/v1/app/registration`, form-encoded), as Feishu speaks
 * it: `init` lists the auth methods, `begin` hands out a device code and the login URL, `poll` answers
 * `authorization_pending` (HTTP 400, JSON) until the person scans and confirms (`scan()`), then the new app's
 * `client_id` / `client_secret`. `override` replaces answers for hostile-server tests.
 */
import type http from 'node:http';
import { send } from './fake-helpers.js';

export interface RegistrationControls {
  /** Form bodies received, in order. */
  readonly requests: Record<string, string>[];
  /** The person scans the code and confirms: the next poll hands out `app` (the fake's own app by default). */
  scan(app?: { id: string; secret: string }, brand?: 'feishu' | 'lark'): void;
  /** The person declines in the app. */
  decline(): void;
  /** Fields merged into the next answers of one action (a hostile server). */
  override(action: 'init' | 'begin' | 'poll', fields: Record<string, unknown>): void;
}

export function fakeRegistration(
  url: () => string,
  app: { id: string; secret: string },
): RegistrationControls & { handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> } {
  const requests: Record<string, string>[] = [];
  const overrides = new Map<string, Record<string, unknown>>();
  let scanned: { id: string; secret: string; brand: string } | undefined;
  let declined = false;
  let codes = 0;
  const answer = (res: http.ServerResponse, action: string, status: number, body: Record<string, unknown>) =>
    send(res, status, { ...body, ...(overrides.get(action) ?? {}) });

  return {
    requests,
    scan(given = app, brand = 'feishu') {
      scanned = { ...given, brand };
    },
    decline() {
      declined = true;
    },
    override(action, fields) {
      overrides.set(action, fields);
    },
    async handle(req, res) {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      requests.push(form);
      if (req.method !== 'POST' || !/application\/x-www-form-urlencoded/.test(req.headers['content-type'] ?? '')) {
        return send(res, 400, { error: 'invalid_request' });
      }
      if (form.action === 'init') {
        return answer(res, 'init', 200, { nonce: 'n1', supported_auth_methods: ['client_secret'] });
      }
      if (form.action === 'begin') {
        codes += 1;
        return answer(res, 'begin', 200, {
          device_code: `dc_${codes}`,
          user_code: `UC${codes}`,
          verification_uri: `${url()}/verification`,
          verification_uri_complete: `${url()}/verification?user_code=UC${codes}`,
          interval: 1,
          expire_in: 600,
        });
      }
      if (form.action === 'poll') {
        if (form.device_code !== `dc_${codes}`) return answer(res, 'poll', 400, { error: 'invalid_grant' });
        if (declined) return answer(res, 'poll', 400, { error: 'access_denied' });
        if (!scanned) return answer(res, 'poll', 400, { error: 'authorization_pending' });
        return answer(res, 'poll', 200, {
          client_id: scanned.id,
          client_secret: scanned.secret,
          user_info: { open_id: 'ou_scanner', tenant_brand: scanned.brand },
        });
      }
      return send(res, 400, { error: 'unsupported_action' });
    },
  };
}
