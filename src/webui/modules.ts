/** Every WebUI API module (api.ts). A route or action is looked up in this order; the first match answers. */
import type { WebuiApiModule } from './api.js';
import { automationsModule } from './automations.js';

export const WEBUI_API_MODULES: readonly WebuiApiModule[] = [automationsModule];
