/** Reading untrusted-content fences in tests: what is inside them, and what is left outside. */
const FENCE =
  /<<<UNTRUSTED_CONTENT nonce=([0-9a-f]{16}) source=([^\n]*)>>>\n([\s\S]*?)\n<<<END_UNTRUSTED_CONTENT nonce=\1>>>/g;

export interface Fence {
  nonce: string;
  source: string;
  body: string;
}

/** Every well-formed fence in `text` (open and close marker with the same nonce), in order. */
export function fences(text: string): Fence[] {
  return [...text.matchAll(FENCE)].map(([, nonce = '', source = '', body = '']) => ({ nonce, source, body }));
}

/** `text` with every fence (markers and body) replaced by `[fenced]`: what the model reads as trusted. */
export function outsideFences(text: string): string {
  return text.replace(FENCE, '[fenced]');
}

/** The body of `text` when it is exactly one fence; throws otherwise. */
export function unfence(text: string): string {
  const [only] = fences(text);
  if (!only || outsideFences(text) !== '[fenced]') throw new Error(`not exactly one fence: ${text.slice(0, 200)}`);
  return only.body;
}
