/** The plain-fetch platform APIs (QQ, DingTalk): one call with a deadline and no redirects, and its JSON answer. */
import { errorMessage } from '../util/errors.js';

/**
 * A call to `platform`'s API. Redirects are refused (the access token in the headers must never follow one to
 * another host); a network failure says which platform could not be reached.
 */
export async function platformRequest(
  platform: string,
  url: string,
  init: RequestInit,
  timeoutMs: number,
): Promise<Response> {
  try {
    return await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    throw new Error(`cannot reach ${platform} at ${new URL(url).origin}: ${errorMessage(err)}`);
  }
}

/** The answer's JSON (`{}` for an empty body); a body that is not JSON throws `notJson()`. */
export async function readPlatformJson(response: Response, notJson: () => Error): Promise<unknown> {
  const text = await response.text();
  if (!text) return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw notJson();
  }
}
