/**
 * The settings pages this build has, in the order the section list shows them (route.ts names every page id). Adding a page: its folder under settings/ (the
 * page and its `messages.ts`), one row here, and its catalog in catalogs.ts.
 */
import type { ComponentType } from 'react';
import type { SettingsClient } from './client.js';
import { ModelsPage } from './models/ModelsPage.js';
import type { SettingsPageId } from './route.js';
import { UsagePage } from './usage/UsagePage.js';

export interface SettingsPageProps {
  client: SettingsClient;
  /** The chat that was open when settings were (for "this chat" views: its automations, its context use). */
  chatId: string | null;
}

export interface SettingsPage {
  id: SettingsPageId;
  component: ComponentType<SettingsPageProps>;
}

export const SETTINGS_PAGES: readonly SettingsPage[] = [
  { id: 'models', component: ModelsPage },
  { id: 'usage', component: UsagePage },
];
