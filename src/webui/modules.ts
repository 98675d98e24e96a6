/** Every WebUI API module (api.ts). A route or action is looked up in this order; the first match answers. */
import type { WebuiApiModule } from './api.js';
import { automationSetupModule } from './automation-setup.js';
import { automationsModule } from './automations.js';
import { mcpPresetsModule } from './mcp-presets.js';
import { memoryModule } from './memory.js';
import { settingsFeaturesModule } from './settings-features.js';
import { settingsModelsModule } from './settings-models.js';
import { settingsPairingModule } from './settings-pairing.js';
import { settingsSystemModule } from './settings-system.js';
import { skillsModule } from './skills.js';
import { usageSessionsModule } from './usage-sessions.js';

export const WEBUI_API_MODULES: readonly WebuiApiModule[] = [
  settingsModelsModule,
  settingsFeaturesModule,
  settingsPairingModule,
  settingsSystemModule,
  mcpPresetsModule,
  skillsModule,
  automationsModule,
  memoryModule,
  usageSessionsModule,
  automationSetupModule,
];
