/** Which settings page the address names (`#settings/<page>`); no page imports here, so the chat loads none. */
export const SETTINGS_PAGE_IDS = ['models', 'channels', 'tools', 'automations', 'skills', 'memory', 'usage'] as const;
export type SettingsPageId = (typeof SETTINGS_PAGE_IDS)[number];

/** `#settings` or `#settings/<page>` → that page (`null` for a page this build does not know); else not settings. */
export function settingsRoute(hash: string): { page: SettingsPageId | null } | null {
  const match = /^#settings(?:\/([\w-]+))?\/?$/.exec(hash);
  if (!match) return null;
  const page = SETTINGS_PAGE_IDS.find((id) => id === match[1]) ?? null;
  return { page };
}

export const settingsHash = (id: SettingsPageId) => `#settings/${id}`;
