/**
 * `groupMessageBufferSize`: in a group where the agent answers only when addressed, the messages it was not
 * addressed by are kept (the last N per group) and handed over with the next one that addresses it, so "what do you
 * think?" comes with what was said. Each is given once: the session keeps it from then on.
 */
const MAX_GROUPS = 500;
const MAX_LINE = 200;

export class GroupContext {
  private readonly buffers = new Map<string, string[]>();

  add(groupId: string, label: string, text: string, keep: number): void {
    const line = `${label.replace(/\s+/g, ' ').slice(0, 80)}: ${text.replace(/\s+/g, ' ').trim().slice(0, MAX_LINE)}`;
    const buffer = this.buffers.get(groupId) ?? [];
    this.buffers.delete(groupId);
    buffer.push(line);
    this.buffers.set(groupId, buffer.slice(-keep));
    if (this.buffers.size > MAX_GROUPS) this.buffers.delete(this.buffers.keys().next().value ?? '');
  }

  /** `text` with the group's kept messages before it (and forgets them); commands go as they are. */
  withContext(groupId: string, text: string): string {
    const lines = this.buffers.get(groupId);
    if (!lines?.length || text.trimStart().startsWith('/')) return text;
    this.buffers.delete(groupId);
    return `[Recent group messages for context:]\n${lines.join('\n')}\n---\n${text}`;
  }
}
