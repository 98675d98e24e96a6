/** Every settings page's strings, for the i18n test (test/webui/i18n.test.ts): one row per page. */
import { automationsMessages } from './automations/messages.js';
import { channelsMessages } from './channels/messages.js';
import { memoryMessages } from './memory/messages.js';
import type { PageMessages } from './messages.js';
import { modelsMessages } from './models/messages.js';
import { skillsMessages } from './skills/messages.js';
import { toolsMessages } from './tools/messages.js';
import { usageMessages } from './usage/messages.js';

export const PAGE_CATALOGS: Readonly<Record<string, PageMessages<string>>> = {
  models: modelsMessages,
  channels: channelsMessages,
  tools: toolsMessages,
  automations: automationsMessages,
  skills: skillsMessages,
  memory: memoryMessages,
  usage: usageMessages,
};
