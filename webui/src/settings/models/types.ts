/** The parts of nanobot's SettingsPayload (GET /api/settings, and every settings action's answer) this page reads. */

export interface ProviderRow {
  name: string;
  label: string;
  is_custom?: boolean;
  configured: boolean;
  auth_type?: 'api_key' | 'oauth';
  api_key_required?: boolean;
  api_key_hint?: string | null;
  api_base?: string | null;
  default_api_base?: string | null;
  oauth_account?: string | null;
  oauth_login_supported?: boolean;
}

export interface PresetRow {
  name: string;
  active: boolean;
  is_default: boolean;
  model: string;
  provider: string;
  resolved_provider?: string | null;
}

export interface ModelSettings {
  agent: {
    model: string;
    provider: string;
    resolved_provider: string | null;
    model_preset: string | null;
  };
  model_presets: PresetRow[];
  model_call_order: string[];
  model_call_order_editable: boolean;
  providers: ProviderRow[];
  requires_restart?: boolean;
}

/** `settings.provider.oauth_login` when the user must still sign in (else the fresh settings). */
export interface OAuthStart {
  status: 'authorization_required';
  provider: string;
  flow_id: string;
  authorization_url: string;
  expires_in: number;
  completion_input?: 'authorization_code' | 'callback_url';
  /** GitHub's device flow: the code to enter at `verification_uri`. */
  user_code?: string;
  verification_uri?: string;
}

export interface ProviderModels {
  status: 'available' | 'unsupported' | 'not_configured' | 'missing_api_base' | 'error';
  models: { id: string; label?: string | null }[];
  message?: string | null;
}

export interface ModelTest {
  ok: boolean;
  model: string;
  resolved_provider: string | null;
  latency_ms: number | null;
  error?: { kind: string; message: string };
}

/** An action's answer: the settings as they now are. */
export const isSettings = (value: unknown): value is ModelSettings =>
  typeof value === 'object' && value !== null && Array.isArray((value as { providers?: unknown }).providers);

/** The providers a model may name: those set up (signed in, or a key/base saved). */
export const usableProviders = (settings: ModelSettings) => settings.providers.filter((p) => p.configured);

/** A link the gateway gave (a sign-in page): only a web address is made a link, never `javascript:` or the like. */
export const webHref = (url: string | undefined): string | undefined =>
  url && /^https?:\/\//i.test(url) ? url : undefined;
