/**
 * Which sessions and panels the agent serves: the ids in `sessions` / `panels`, and with `"*"` every one MoChat
 * lists (`/api/claw/sessions/list`, `/api/claw/groups/get`, read again every refreshIntervalMs). A session named
 * in `sessions` or in the first listing, without a saved cursor, is "cold": its first batch of events only sets the
 * cursor, so old history is not answered (a session listed later is a new one: all of it is answered); a panel's
 * first listing likewise only marks its messages seen.
 */
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { MochatApi } from './api.js';
import type { SessionCursors } from './cursors.js';
import { isObject, stringField } from './events.js';

export interface TargetsOptions {
  api: MochatApi;
  cursors: SessionCursors;
  log: Logger;
  /** Sessions / panels found by a refresh (subscribe them while the socket is up). */
  onNewSessions(ids: string[]): Promise<unknown>;
  onNewPanels(ids: string[]): Promise<unknown>;
}

function idsOf(values: readonly string[]): { ids: string[]; all: boolean } {
  const cleaned = values.map((value) => value.trim()).filter(Boolean);
  return { ids: [...new Set(cleaned.filter((value) => value !== '*'))].sort(), all: cleaned.includes('*') };
}

export class Targets {
  private readonly sessions = new Set<string>();
  private readonly panels = new Set<string>();
  private readonly cold = new Set<string>();
  private readonly coldPanels = new Set<string>();
  private readonly sessionByConverse = new Map<string, string>();
  private readonly panelGroups = new Map<string, string>();
  private autoSessions = false;
  /** The session list has been read once: sessions it brings later are new ones, their events all unanswered. */
  private sessionsListed = false;
  autoPanels = false;

  constructor(private readonly options: TargetsOptions) {}

  seed(sessions: readonly string[], panels: readonly string[]): void {
    const s = idsOf(sessions);
    const p = idsOf(panels);
    this.autoSessions = s.all;
    this.autoPanels = p.all;
    for (const id of s.ids) this.addSession(id);
    for (const id of p.ids) this.addPanel(id);
  }

  sessionIds(): string[] {
    return [...this.sessions].sort();
  }

  panelIds(): string[] {
    return [...this.panels].sort();
  }

  /** As upstream: a push from any panel is taken while no panel is configured at all. */
  servesPanel(panelId: string): boolean {
    return this.panels.has(panelId) || (this.panels.size === 0 && !this.autoPanels);
  }

  groupOf(panelId: string): string | undefined {
    return this.panelGroups.get(panelId);
  }

  noteGroup(panelId: string, groupId: string): void {
    this.panelGroups.set(panelId, groupId);
  }

  /** True (once) when the session was cold: this batch only sets its cursor. */
  warm(sessionId: string): boolean {
    return this.cold.delete(sessionId);
  }

  /** True (once) for a panel's first listing. */
  warmPanel(panelId: string): boolean {
    return this.coldPanels.delete(panelId);
  }

  /**
   * The session a conversation belongs to; an unknown one makes the session list be read again, and (as upstream)
   * every session it lists is served from then on, whatever `sessions` says: allowFrom decides who is answered.
   */
  async sessionOfConverse(converseId: string): Promise<string | undefined> {
    const known = this.sessionByConverse.get(converseId);
    if (known) return known;
    await this.refreshSessions(true, true);
    return this.sessionByConverse.get(converseId);
  }

  /** Reads the lists `"*"` asks for; failures are logged (the next refresh tries again). */
  async refresh(subscribeNew = false): Promise<void> {
    if (this.autoSessions) await this.refreshSessions(subscribeNew);
    if (this.autoPanels) await this.refreshPanels(subscribeNew);
  }

  private addSession(id: string, cold = true): boolean {
    if (this.sessions.has(id)) return false;
    this.sessions.add(id);
    if (cold && !this.options.cursors.has(id)) this.cold.add(id);
    return true;
  }

  private addPanel(id: string): boolean {
    if (this.panels.has(id)) return false;
    this.panels.add(id);
    this.coldPanels.add(id);
    return true;
  }

  private async refreshSessions(subscribeNew: boolean, addAll = this.autoSessions): Promise<void> {
    let answer: Record<string, unknown>;
    try {
      answer = await this.options.api.post('/api/claw/sessions/list', {});
    } catch (err) {
      this.options.log.warn(`listing MoChat sessions failed: ${errorMessage(err)}`);
      return;
    }
    if (!Array.isArray(answer.sessions)) return;
    const added: string[] = [];
    const first = !this.sessionsListed;
    for (const session of answer.sessions) {
      const id = stringField(session, 'sessionId');
      if (!id) continue;
      const converseId = stringField(session, 'converseId');
      if (addAll && this.addSession(id, first)) added.push(id);
      if (converseId && this.sessions.has(id)) this.sessionByConverse.set(converseId, id);
    }
    if (first) this.sessionsListed = true;
    if (added.length && subscribeNew) await this.options.onNewSessions(added);
  }

  private async refreshPanels(subscribeNew: boolean): Promise<void> {
    let answer: Record<string, unknown>;
    try {
      answer = await this.options.api.post('/api/claw/groups/get', {});
    } catch (err) {
      this.options.log.warn(`reading the MoChat workspace group failed: ${errorMessage(err)}`);
      return;
    }
    if (!Array.isArray(answer.panels)) return;
    const groupId = stringField(answer, '_id', 'id', 'groupId');
    const added: string[] = [];
    for (const panel of answer.panels) {
      // Type 0 is a text panel; others (web pages, plugins) carry no messages.
      if (!isObject(panel) || (typeof panel.type === 'number' && panel.type !== 0)) continue;
      const id = stringField(panel, 'id', '_id');
      if (!id) continue;
      if (groupId) this.panelGroups.set(id, groupId);
      if (this.addPanel(id)) added.push(id);
    }
    if (added.length && subscribeNew) await this.options.onNewPanels(added);
  }
}
