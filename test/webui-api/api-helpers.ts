/** A WebUI API client over a real gateway: `GET /api/…` with the token, `webui_request` over the WebSocket. */
import { connect, type TestClient } from '../channels/websocket/helpers.js';

export interface ApiClient {
  get(path: string): Promise<{ status: number; body: Record<string, unknown> }>;
  /** `webui_request` → its `webui_response` (`ok` with `result`, or `error: {status, message}`). */
  request(action: unknown, payload: unknown): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export async function apiClient(target: { port: number; token: string; url: string }): Promise<ApiClient> {
  const ws: TestClient = await connect(target.port, { token: target.token, clientId: 'webui', origin: target.url });
  await ws.next((f) => f.event === 'ready');
  let counter = 0;
  return {
    async get(path) {
      const res = await fetch(`${target.url}${path}`, { headers: { authorization: `Bearer ${target.token}` } });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    async request(action, payload) {
      counter += 1;
      const request_id = `req-${counter}`;
      ws.send({ type: 'webui_request', request_id, action, payload });
      const frame = await ws.next((f) => f.event === 'webui_response' && f.request_id === request_id, 30_000);
      return frame as unknown as Record<string, unknown>;
    },
    close: () => ws.close(),
  };
}
