/** Every settings page's strings, for the i18n test (test/webui/i18n.test.ts): one row per page. */
import type { PageMessages } from './messages.js';
import { modelsMessages } from './models/messages.js';
import { usageMessages } from './usage/messages.js';

export const PAGE_CATALOGS: Readonly<Record<string, PageMessages<string>>> = {
  models: modelsMessages,
  usage: usageMessages,
};
