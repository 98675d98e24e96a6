/** What the model is told when an open-then-check open fails: missing, the wrong kind of entry, or a refusal. */
import { isNotFound, WorkspaceFsError } from '../../security/workspace-fs.js';

export function openFailure(error: unknown, shown: string, missing = `File not found: ${shown}`): string {
  if (isNotFound(error)) return missing;
  if (error instanceof WorkspaceFsError) {
    // The check's own verdict (the policy's refusal) when there is one, else the layer's message.
    const verdict = /: (Error: .*)$/s.exec(error.message)?.[1];
    return verdict ?? `Error: ${error.message}. Paths that change while they are opened are refused; try again.`;
  }
  return `Could not open ${shown}: ${error instanceof Error ? error.message : String(error)}`;
}
