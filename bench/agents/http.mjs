// JSON over HTTP for the agents' APIs.

/** POSTs `body` as JSON and returns the parsed answer; throws on a non-2xx status with the start of the body. */
export async function postJson(url, body, headers = {}, timeoutMs = 300_000) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 200)}`);
  return JSON.parse(text);
}
