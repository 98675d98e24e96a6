/** Commands the gateway answers beside a running turn instead of queueing them behind it (they start no turn). */
export const PRIORITY_COMMANDS = ['/stop', '/status', '/restart'] as const;

/** A message's command word, lower-cased: `/stop@my_bot` (Telegram groups) is still `/stop`. */
export function commandWord(content: string): string {
  const word = content.trim().split(/\s+/, 1)[0]?.toLowerCase() ?? '';
  return word.replace(/@\S*$/, '');
}
