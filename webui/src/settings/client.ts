/**
 * What a settings page talks to: reads as `GET /api/<route>` and changes as `webui_request` actions over the page's
 * WebSocket — nanobot's one settings API (src/webui/api.ts on the gateway), not a second one.
 */
export interface SettingsClient {
  /** `GET /api/<route>` (e.g. `settings`, `webui/skills`); rejects with the gateway's message. */
  get<T>(route: string): Promise<T>;
  /** A `webui_request` action (e.g. `settings.agent.update`); resolves with its result, rejects with its message. */
  act<T>(action: string, payload?: Record<string, unknown>): Promise<T>;
}
