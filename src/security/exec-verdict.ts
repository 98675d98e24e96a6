/** The exec guard's verdict and how a refusal reads (one line, naming the segment). */

export type CommandCheck = { ok: true } | { ok: false; reason: string };

export const BLOCKED = 'Command blocked by safety guard';
export const HARD_BOUNDARY = 'This is a hard boundary; do not try to get around it.';

export const blocked = (reason: string, segment: string, note = ''): CommandCheck => ({
  ok: false,
  reason: `${BLOCKED}: ${reason} in \`${segment.length > 120 ? `${segment.slice(0, 117)}...` : segment}\`${note}`,
});
