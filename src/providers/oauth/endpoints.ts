/**
 * Where the OAuth providers sign in. Every URL can be overridden by an environment variable (nanobot's names for
 * Copilot), for GitHub Enterprise and for tests, which aim them at a loopback fake.
 */
type Env = Record<string, string | undefined>;

const pick = (env: Env, name: string, fallback: string): string => env[name]?.trim() || fallback;

export interface CopilotEndpoints {
  clientId: string;
  deviceCodeUrl: string;
  accessTokenUrl: string;
  userUrl: string;
  /** Exchanges the GitHub token for a short-lived Copilot token. */
  copilotTokenUrl: string;
  /** The chat API when neither the config nor the token exchange names one. */
  chatBaseUrl?: string;
}

export function copilotEndpoints(env: Env): CopilotEndpoints {
  const chatBaseUrl = env.NANOBOT_COPILOT_BASE_URL?.trim();
  return {
    // The public client id of GitHub's Copilot editor integrations.
    clientId: pick(env, 'NANOBOT_GITHUB_COPILOT_CLIENT_ID', 'Iv1.b507a08c87ecfe98'),
    deviceCodeUrl: pick(env, 'NANOBOT_GITHUB_DEVICE_CODE_URL', 'https://github.com/login/device/code'),
    accessTokenUrl: pick(env, 'NANOBOT_GITHUB_ACCESS_TOKEN_URL', 'https://github.com/login/oauth/access_token'),
    userUrl: pick(env, 'NANOBOT_GITHUB_USER_URL', 'https://api.github.com/user'),
    copilotTokenUrl: pick(env, 'NANOBOT_COPILOT_TOKEN_URL', 'https://api.github.com/copilot_internal/v2/token'),
    ...(chatBaseUrl ? { chatBaseUrl } : {}),
  };
}

export interface CodexEndpoints {
  clientId: string;
  authorizeUrl: string;
  tokenUrl: string;
  /** The local callback port registered for the Codex CLI client (1455); 0 picks a free one (tests). */
  callbackPort: number;
  callbackPath: string;
  originator: string;
}

export function codexEndpoints(env: Env): CodexEndpoints {
  const port = Number(env.NANOBOT_OPENAI_CODEX_CALLBACK_PORT ?? '1455');
  return {
    // The public client id of OpenAI's Codex CLI, the one ChatGPT subscriptions accept.
    clientId: pick(env, 'NANOBOT_OPENAI_CODEX_CLIENT_ID', 'app_EMoamEEZ73f0CkXaXp7hrann'),
    authorizeUrl: pick(env, 'NANOBOT_OPENAI_CODEX_AUTHORIZE_URL', 'https://auth.openai.com/oauth/authorize'),
    tokenUrl: pick(env, 'NANOBOT_OPENAI_CODEX_TOKEN_URL', 'https://auth.openai.com/oauth/token'),
    callbackPort: Number.isInteger(port) && port >= 0 && port < 65536 ? port : 1455,
    callbackPath: '/auth/callback',
    originator: 'nanobot',
  };
}
