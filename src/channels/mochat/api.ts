/**
 * MoChat's HTTP API: every call is a POST of JSON to `<baseUrl><path>` with the agent's `X-Claw-Token`. An answer
 * may be wrapped as `{code, message, data}` (code 200 is success, `data` the result) or be the result itself.
 */
import { errorMessage } from '../../util/errors.js';

export type Json = Record<string, unknown>;

export class MochatApiError extends Error {
  constructor(
    message: string,
    /** The HTTP status, or the wrapped `code`. */
    readonly status: number,
  ) {
    super(message);
    this.name = 'MochatApiError';
  }

  /** MoChat refused the token (rather than being unreachable or failing). */
  get refused(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

export interface MochatApiOptions {
  baseUrl: string;
  token: string;
  fetch?: typeof fetch;
  /** Cap for one call that is not a long-poll. */
  timeoutMs?: number;
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export class MochatApi {
  private readonly fetch: typeof fetch;

  constructor(private readonly options: MochatApiOptions) {
    this.fetch = options.fetch ?? fetch;
  }

  /** POSTs `body`; resolves to the result object (`{}` when there is none); rejects with a MochatApiError. */
  async post(path: string, body: Json, signal?: AbortSignal, timeoutMs?: number): Promise<Json> {
    const timeout = AbortSignal.timeout(timeoutMs ?? this.options.timeoutMs ?? 30_000);
    let response: Response;
    try {
      response = await this.fetch(`${this.options.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-claw-token': this.options.token },
        body: JSON.stringify(body),
        redirect: 'error',
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      throw new MochatApiError(`MoChat ${path} could not be reached: ${errorMessage(err)}`, 0);
    }
    const text = await response.text().catch(() => '');
    if (!response.ok) {
      throw new MochatApiError(`MoChat ${path}: HTTP ${response.status} ${text.slice(0, 200)}`, response.status);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return {};
    }
    if (!isObject(parsed)) return {};
    if (typeof parsed.code === 'number') {
      if (parsed.code !== 200) {
        const why = String(parsed.message || parsed.name || 'request failed').slice(0, 200);
        throw new MochatApiError(`MoChat ${path}: ${why} (code ${parsed.code})`, parsed.code);
      }
      return isObject(parsed.data) ? parsed.data : {};
    }
    return parsed;
  }
}
