/**
 * The payloads Settings › Channels reads, in nanobot's shapes (the gateway's src/webui/channel-catalog.ts,
 * channel-validate.ts and settings-pairing.ts answer them): only the fields this page uses.
 */

export type FieldKind = 'string' | 'secret' | 'int' | 'bool' | 'list' | 'enum';

/** One field of a channel's setup description (src/channels/setup.ts), as the catalog serves it. */
export interface SetupField {
  /** `channels.<name>.<field>`: the key a form value is sent under. */
  key: string;
  field: string;
  kind: FieldKind | string;
  choices: string[];
  required: boolean;
  default_value?: string;
  label?: string;
  help?: string;
}

export interface ChannelFeature {
  name: string;
  display_name: string;
  capabilities?: string[];
  type: string;
  enabled: boolean;
  running?: boolean;
  runtime_status?: 'running' | 'starting' | 'failed' | 'stopped' | string;
  runtime_error?: string;
  configured?: boolean;
  config_values?: Record<string, string>;
  configured_fields?: string[];
  setup?: { fields: SetupField[]; official_url?: string; one_of?: string[][] };
  installed: boolean;
  requires_restart: boolean;
}

export interface FeaturesPayload {
  features: ChannelFeature[];
  enabled_count: number;
  requires_restart?: boolean;
  last_action?: { ok: boolean; message: string; enabled?: boolean };
}

export interface ValidationCheck {
  id: string;
  label: string;
  status: 'pass' | 'warn' | 'fail' | 'skipped' | string;
  message?: string;
}

export interface ValidationPayload {
  name: string;
  status: 'connected' | 'configured' | 'needs_setup' | 'invalid' | string;
  checks: ValidationCheck[];
  identity?: { name?: string; account?: string; workspace?: string };
  /** Bare field names (`token`), not `channels.<name>.` keys. */
  missing_fields: string[];
  can_enable: boolean;
  message?: string;
}

export interface ConfigurePayload {
  name: string;
  saved: boolean;
  saved_keys: string[];
  nanobot_features: FeaturesPayload;
}

export interface PairingRequest {
  code: string;
  channel: string;
  sender_id: string;
  expires_in_seconds?: number | null;
}

export interface ApprovedSender {
  channel: string;
  sender_id: string;
  username?: string;
  approved_at?: string;
}

export interface PairingPayload {
  requests: PairingRequest[];
  /** Ours beyond nanobot's shape: the senders let in by pairing (`nanobot channels pair revoke` removes one). */
  approved?: ApprovedSender[];
}

/** The channel serving this WebUI: it cannot be switched off from it. */
export const isAlwaysOn = (feature: ChannelFeature) => feature.capabilities?.includes('always_enabled') === true;
/** The channel's login shows a code to scan: its card offers Connect (QrConnect). */
export const hasQrConnect = (feature: ChannelFeature) => feature.capabilities?.includes('qr_connect') === true;
