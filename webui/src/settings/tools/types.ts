/** The parts of the gateway's answers the Tools page reads (nanobot's SettingsPayload and McpPresetsPayload). */

export interface SearchProviderInfo {
  name: string;
  label: string;
  credential: 'api_key' | 'base_url' | 'none' | string;
}

export interface ToolSettings {
  web_search: {
    provider: string;
    api_key_hint: string | null;
    base_url: string | null;
    max_results: number;
    providers: SearchProviderInfo[];
  };
  runtime: { workspace_path: string };
  advanced: {
    restrict_to_workspace: boolean;
    exec_sandbox: string | null;
    ssrf_whitelist?: string[];
  };
}

export interface McpRow {
  name: string;
  transport: string;
  connection_summary: string;
  status: string;
  runtime_status?: string;
  error?: string;
  enabled_tools: string[];
  tool_names: string[];
}

export interface McpPayload {
  presets: McpRow[];
  last_action?: { ok: boolean; message: string; tool_names?: string[]; error?: string | null };
}

export type SandboxMode = 'auto' | 'bwrap' | 'none';
export const SANDBOX_MODES: readonly SandboxMode[] = ['auto', 'bwrap', 'none'];
