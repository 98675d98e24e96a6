/**
 * The settings pages this build has, in the order the section list shows them (route.ts names every page id).
 * Adding a page: its folder under settings/ (the page and its `messages.ts`), one row here, and its catalog in
 * catalogs.ts.
 */
import type { ComponentType } from 'react';
import { AutomationsPage } from './automations/AutomationsPage.js';
import { ChannelsPage } from './channels/ChannelsPage.js';
import type { SettingsClient } from './client.js';
import { MemoryPage } from './memory/MemoryPage.js';
import { ModelsPage } from './models/ModelsPage.js';
import type { SettingsPageId } from './route.js';
import { SkillsPage } from './skills/SkillsPage.js';
import { ToolsPage } from './tools/ToolsPage.js';
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
  { id: 'channels', component: ChannelsPage },
  { id: 'tools', component: ToolsPage },
  { id: 'automations', component: AutomationsPage },
  { id: 'skills', component: SkillsPage },
  { id: 'memory', component: MemoryPage },
  { id: 'usage', component: UsagePage },
];
