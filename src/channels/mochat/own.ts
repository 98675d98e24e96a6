/**
 * The agent's own messages, recognised when MoChat echoes them back as events of their session or panel. With
 * agentUserId set its author says so; without it (upstream would answer its own words) by the message ids the send
 * calls returned, by the text of a send still on its way (the echo may overtake the answer to the send), and then
 * by the author those echoes showed.
 */

const KEPT_IDS = 500;

export class OwnMessages {
  private readonly ids: string[] = [];
  private readonly pending = new Map<string, string[]>();
  private readonly authors = new Set<string>();

  /** A send to `targetId` starts; call the result with the new message's id ('' if none) when it has ended. */
  sending(targetId: string, text: string): (messageId: string) => void {
    const list = this.pending.get(targetId) ?? [];
    list.push(text.trim());
    this.pending.set(targetId, list);
    return (messageId) => {
      const at = list.indexOf(text.trim());
      if (at >= 0) list.splice(at, 1);
      if (list.length === 0 && this.pending.get(targetId) === list) this.pending.delete(targetId);
      if (!messageId) return;
      this.ids.push(messageId);
      if (this.ids.length > KEPT_IDS) this.ids.shift();
    };
  }

  isOwn(targetId: string, messageId: string, author: string, text: string): boolean {
    if (this.authors.has(author)) return true;
    const byId = messageId !== '' && this.ids.includes(messageId);
    const inFlight = this.pending.get(targetId)?.includes(text.trim()) ?? false;
    if (byId || inFlight) this.authors.add(author);
    return byId || inFlight;
  }
}
