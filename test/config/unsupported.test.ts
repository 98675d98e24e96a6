/**
 * Every key of upstream nanobot's config schema (nanobot/config/schema.py at 3852956a7, written out below as data)
 * is either read by nanobot-ts or in the registry of keys not supported yet, which doctor/status/gateway report.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { channelSchemas, findChannel } from '../../src/channels/registry.js';
import { readRawConfig } from '../../src/config/load.js';
import { configNotices } from '../../src/config/notices.js';
import { closest, findUnknownKeys } from '../../src/config/unknown-keys.js';
import { IGNORED_KEYS, isRegistered, UNSUPPORTED_KEYS } from '../../src/config/unsupported.js';
import { findSpec } from '../../src/providers/registry.js';
import { findTranscriptionProvider } from '../../src/providers/transcription.js';
import { type UpstreamHomeName, upstreamHome } from '../helpers/upstream-homes.js';

const ROOT = join(import.meta.dirname, '..', '..');

const each = (prefix: string, keys: string) =>
  keys
    .split(/\s+/)
    .filter(Boolean)
    .map((key) => `${prefix}.${key}`);

/** Upstream's key paths (camelCase, `*` = a user-chosen name or list index), from its pydantic models. */
const UPSTREAM_PATHS: readonly string[] = [
  ...each(
    'agents.defaults',
    `workspace modelPreset model provider maxTokens contextWindowTokens contextBlockLimit temperature fallbackModels
     maxToolIterations maxConcurrentSubagents failOnToolError maxToolResultChars providerRetryMode toolHintMaxLength
     reasoningEffort timezone timezoneMode botName botIcon unifiedSession disabledSkills idleCompactAfterMinutes
     idleCompactCheckIntervalSeconds consolidationRatio`,
  ),
  ...each('agents.defaults.dream', 'enabled intervalH cron modelOverride'),
  ...each(
    'agents.defaults.fallbackModels.*',
    'model provider maxTokens contextWindowTokens temperature reasoningEffort',
  ),
  ...each(
    'channels',
    `sendProgress sendToolHints showReasoning extractDocumentText sendMaxRetries transcriptionProvider
     transcriptionLanguage`,
  ),
  ...each(
    'channels',
    `dingtalk discord email feishu matrix mattermost mochat msteams napcat qq signal slack telegram websocket wecom
     weixin whatsapp`,
  ),
  ...each('transcription', 'enabled provider model language maxDurationSec maxUploadMb'),
  ...each(
    'providers',
    `custom azureOpenai bedrock anthropic openai openrouter orcarouter assemblyai huggingface skywork deepseek groq
     zhipu dashscope modelscope vllm ollama lmStudio atomicChat ovms gemini moonshot kimiCoding minimax
     minimaxAnthropic mistral stepfun xiaomiMimo longcat antLing aihubmix siliconflow edenai novita volcengine
     volcengineCodingPlan byteplus byteplusCodingPlan openaiCodex xaiGrok githubCopilot qianfan nvidia opencode
     opencodeZen opencodeGo`,
  ),
  ...each('providers.*', 'displayName apiKey apiBase apiType extraHeaders extraBody extraQuery proxy thinkingStyle'),
  ...each('providers.bedrock', 'region profile'),
  ...each('api', 'host port timeout apiKey'),
  ...each('gateway', 'host port restartMode'),
  ...each('gateway.heartbeat', 'enabled intervalS keepRecentMessages'),
  ...each('tools.web', 'enable proxy userAgent'),
  ...each('tools.web.search', 'provider apiKey baseUrl maxResults timeout'),
  'tools.web.fetch.useJinaReader',
  ...each(
    'tools.exec',
    `enable timeout pathPrepend pathAppend sandbox sandboxRoBinds sandboxRwBinds allowedEnvKeys allowPatterns
     denyPatterns`,
  ),
  'tools.file.enable',
  ...each('tools.cliApps', 'enable installTimeout runTimeout catalogTtlSeconds'),
  ...each('tools.my', 'enable allowSet'),
  ...each(
    'tools.imageGeneration',
    'enabled provider model defaultAspectRatio defaultImageSize maxImagesPerTurn saveDir',
  ),
  ...each(
    'tools',
    `maxSessionMessagesPerMinute restrictToWorkspace webuiAllowLocalServiceAccess webuiAllowRemotePackageInstall
     ssrfWhitelist`,
  ),
  ...each('tools.mcpServers.*', 'type auth command args env cwd url headers toolTimeout enabledTools'),
  ...each('modelPresets.*', 'model provider maxTokens contextWindowTokens temperature reasoningEffort'),
  // The blocks of the channels nanobot-ts has (each channel's pydantic model upstream).
  ...each(
    'channels.telegram',
    `enabled token mode allowFrom proxy replyToMessage reactEmoji groupPolicy connectionPoolSize poolTimeout streaming
     inlineKeyboards richMessages streamEditInterval webhookUrl webhookListenHost webhookListenPort webhookPath
     webhookSecretToken webhookMaxConnections`,
  ),
  ...each(
    'channels.discord',
    `enabled token allowFrom allowChannels intents groupPolicy readReceiptEmoji workingEmoji workingEmojiDelay
     streaming proxy proxyUsername proxyPassword`,
  ),
  ...each(
    'channels.slack',
    `enabled mode webhookPath botToken appToken userTokenReadOnly replyInThread reactEmoji doneEmoji
     includeThreadContext threadContextLimit allowFrom groupPolicy groupAllowFrom groupRequireMention dm`,
  ),
  ...each(
    'channels.feishu',
    `instanceId name identityKey enabled appId appSecret encryptKey verificationToken allowFrom reactEmoji doneEmoji
     toolHintPrefix groupPolicy replyToMessage streaming domain topicIsolation`,
  ),
  ...each(
    'channels.email',
    `enabled consentGranted imapHost imapPort imapUsername imapPassword imapMailbox imapUseSsl smtpHost smtpPort
     smtpUsername smtpPassword smtpUseTls smtpUseSsl fromAddress autoReplyEnabled pollIntervalSeconds markSeen
     postAction postActionMoveMailbox postActionExpunge postActionIgnoreSkipped maxBodyChars subjectPrefix allowFrom
     verifyDkim verifySpf allowedAttachmentTypes maxAttachmentSize maxAttachmentsPerEmail`,
  ),
  ...each(
    'channels.matrix',
    `enabled homeserver userId password accessToken deviceId e2eeEnabled sasVerification syncStopGraceSeconds
     maxMediaBytes maxConcurrentMediaDownloads allowFrom groupPolicy groupAllowFrom allowRoomMentions streaming`,
  ),
  ...each(
    'channels.mattermost',
    `enabled serverUrl token teamId allowFromMatchMode allowFrom groupPolicy groupPolicyInThread groupAllowFrom
     replyInThread includeThreadContext threadContextLimit streaming streamingMaxChars reactEmoji doneEmoji
     sendProgress sendToolHints dm`,
  ),
  ...each('channels.whatsapp', 'enabled allowFrom groupPolicy databasePath lidMappings'),
  ...each(
    'channels.signal',
    `enabled phoneNumber daemonHost daemonPort groupMessageBufferSize attachmentsDir dm group`,
  ),
  ...each('channels.signal.dm', 'enabled policy allowFrom'),
  ...each('channels.signal.group', 'enabled policy allowFrom requireMention'),
  ...each(
    'channels.msteams',
    `enabled appId appPassword tenantId host port path allowFrom replyInThread mentionOnlyResponse
     validateInboundAuth refTtlDays pruneWebChatRefs pruneNonPersonalRefs refTouchIntervalS trustedServiceUrlHosts`,
  ),
  ...each(
    'channels.weixin',
    `enabled token allowFrom baseUrl cdnBaseUrl routeTag stateDir pollTimeout sendProgress sendToolHints
     replyProgressMessages replyProgressMaxMessages contextMessageBudget streaming blockStreaming
     blockStreamingMinChars blockStreamingMaxMessages`,
  ),
  ...each(
    'channels.dingtalk',
    `enabled clientId clientSecret allowFrom allowRemoteMediaRedirects remoteMediaRedirectAllowedHosts
     groupUserIsolation disablePrivateChat`,
  ),
  ...each(
    'channels.qq',
    'enabled appId secret allowFrom msgFormat ackMessage mediaDir downloadChunkSize downloadMaxBytes',
  ),
  ...each(
    'channels.napcat',
    'enabled wsUrl accessToken allowFrom groupPolicy groupPolicyOverrides welcomeNewMembers maxImageBytes',
  ),
  ...each(
    'channels.mochat',
    `enabled baseUrl socketUrl socketPath socketDisableMsgpack socketReconnectDelayMs socketMaxReconnectDelayMs
     socketConnectTimeoutMs refreshIntervalMs watchTimeoutMs watchLimit retryDelayMs maxRetryAttempts clawToken
     agentUserId sessions panels allowFrom mention groups replyDelayMode replyDelayMs`,
  ),
  ...each('channels.mochat.mention', 'requireInGroups'),
  ...each('channels.mochat.groups.*', 'requireMention'),
  ...each(
    'channels.websocket',
    `enabled host port unixSocketPath path publicWsUrl token tokenIssuePath tokenIssueSecret trustedProxyAuth
     tokenTtlS websocketRequiresToken allowFrom streaming maxMessageBytes pingIntervalS pingTimeoutS sslCertfile
     sslKeyfile`,
  ),
];

/** Keys v0.3.0's onboard wrote that the latest upstream no longer reads. */
const OLDER_UPSTREAM_PATHS = [
  ...each('agents.defaults.dream', 'maxBatchSize maxIterations annotateLineAges'),
  // Upstream's WhatsApp bridge (Baileys in a Node process), replaced by neonize in later releases.
  ...each('channels.whatsapp', 'bridgeUrl bridgeToken'),
];

/** Where a key is read: our sources but the config plumbing that only names keys. */
const NAMING_ONLY = ['schema.ts', 'unsupported.ts', 'unknown-keys.ts', 'prepare.ts', 'notices.ts'].map((f) =>
  join('src', 'config', f),
);
function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') && !NAMING_ONLY.includes(relative(ROOT, path)) ? [path] : [];
  });
}
const SOURCES = sourceFiles(join(ROOT, 'src')).map((file) => ({ file, text: readFileSync(file, 'utf8') }));

const SAMPLE_NAMES: Record<string, string> = { fallbackModels: '0', mcpServers: 'srv', modelPresets: 'fast' };
const concrete = (path: string) =>
  path.split('.').map((part, i, parts) => (part === '*' ? (SAMPLE_NAMES[parts[i - 1] ?? ''] ?? 'openai') : part));

/** A tree that sets `path` (list indexes make lists). */
function treeWith(path: string[], value: unknown): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let node: Record<string, unknown> | unknown[] = root;
  path.forEach((part, i) => {
    const last = i === path.length - 1;
    const next = last ? value : /^\d+$/.test(path[i + 1] ?? '') ? [] : {};
    (node as Record<string, unknown>)[part] = next;
    node = next as Record<string, unknown>;
  });
  return root;
}

describe('upstream’s config keys: honoured, or reported as not supported', () => {
  it.each(UPSTREAM_PATHS)('%s', (path) => {
    const at = concrete(path);
    if (isRegistered(at)) return;
    // Known to our schema (a channel's key: to that channel's): setting it is no "unknown key".
    expect(findUnknownKeys(treeWith(at, {}), channelSchemas())).toEqual([]);
    const [section, name] = at;
    const leaf = at.at(-1) as string;
    if (section === 'channels' && at.length === 2 && !/^[a-z]+[A-Z]/.test(leaf)) {
      expect(findChannel(leaf), `channels.${leaf} is neither a channel of ours nor in the registry`).toBeDefined();
    } else if (section === 'providers' && at.length === 2) {
      expect(
        findSpec(name ?? '') ?? findTranscriptionProvider(name),
        `providers.${name} is neither a provider of ours nor in the registry`,
      ).toBeDefined();
    } else {
      const readers = SOURCES.filter(({ text }) => new RegExp(`\\b${leaf}\\b`).test(text));
      expect(
        readers.length,
        `${path}: nothing in src/ reads "${leaf}"; honour it or add it to unsupported.ts`,
      ).toBeGreaterThan(0);
    }
  });

  it('lists no key upstream does not have', () => {
    const upstream = [...UPSTREAM_PATHS, ...OLDER_UPSTREAM_PATHS];
    const patterns = [...UNSUPPORTED_KEYS.map((entry) => entry.path), ...IGNORED_KEYS];
    for (const pattern of patterns) {
      const covers = upstream.some((path) => path === pattern || path.startsWith(`${pattern}.`));
      expect(covers, `${pattern} is not an upstream key`).toBe(true);
    }
  });
});

describe('upstream’s own homes', () => {
  it.each(['pyhome', 'pyhome-agentonly', 'py030home'] as UpstreamHomeName[])(
    '%s: its onboard output sets nothing unsupported and nothing unknown',
    async (name) => {
      const home = upstreamHome(name);
      try {
        expect(configNotices(await readRawConfig(home.configPath), {}, undefined, channelSchemas())).toEqual([]);
      } finally {
        home.cleanup();
      }
    },
  );
});

describe('config notices', () => {
  it('names each unsupported key that is set, with its reason, and not the ones left at upstream’s default', () => {
    const notices = configNotices({
      agents: { defaults: { unifiedSession: true, failOnToolError: true, botName: 'Max' } },
      tools: { my: { enable: true, allowSet: true }, cliApps: { enable: true }, imageGeneration: { enabled: true } },
      transcription: { enabled: true, provider: 'groq', language: null },
      channels: { transcriptionLanguage: 'de', qq: { enabled: true }, weixin: { enabled: false, token: '' } },
      providers: { openai: { proxy: 'http://127.0.0.1:3128' }, custom: { proxy: null }, groq: { proxy: '' } },
      gateway: { restartMode: 'exit' },
    });
    // Filtered by the registry: an entry removed when its key starts working drops out here by itself.
    const expected = [
      'agents.defaults.unifiedSession',
      'agents.defaults.botName',
      'gateway.restartMode',
      'providers.openai.proxy',
      'tools.my',
      'tools.imageGeneration',
      'channels.qq',
    ].filter((path) => isRegistered(path.split('.')));
    expect(expected.length).toBeGreaterThan(0);
    expect(notices.map((n) => n.path)).toEqual(expected);
    // Works now: an enabled image generation tool is no notice.
    expect(notices.map((n) => n.path)).not.toContain('tools.imageGeneration');
    expect(notices.every((n) => n.kind === 'unsupported' && n.text.startsWith('not supported in this version: '))).toBe(
      true,
    );
    expect(notices.find((n) => n.path === 'tools.my')?.text).toMatch(/tools\.my \(allowSet\) — .*`my`/);
  });

  it('reads upstream’s old spellings under their current names (tools.myEnabled is tools.my.enable)', () => {
    expect(configNotices({ tools: { myEnabled: false } }).map((n) => n.text)).toEqual([
      expect.stringMatching(/^not supported in this version: tools\.my \(enable\)/),
    ]);
    expect(configNotices({ agents: { defaults: { sessionTtlMinutes: 5, dream: { model: 'fast' } } } })).toEqual([]);
  });

  it('reports unknown keys at every level with the nearest known key, and never a known one', () => {
    const notices = configNotices({
      agents: { defaults: { modle: 'x', maxTokns: 5, dream: { intervalHours: 3 }, fallbackModels: [{ modle: 'y' }] } },
      providers: { openai: { apiKye: 'k' } },
      tools: { exec: { timout: 5 }, mcpServers: { fs: { comand: 'npx' } }, mY: { enable: true } },
      channels: { telegarm: { enabled: true }, sendProgres: true, telegram: { anyKeyOfItsOwn: 1 } },
      gateway: { heartbeat: { intervalSec: 5 } },
      modelPresets: { fast: { model: 'm', temprature: 1 } },
      zzzz: 1,
    });
    const found = notices.map((n) => [n.path, /did you mean `([^`]+)`/.exec(n.text)?.[1]]);
    expect(found.sort()).toEqual(
      [
        ['agents.defaults.modle', 'model'],
        ['agents.defaults.maxTokns', 'maxTokens'],
        ['agents.defaults.dream.intervalHours', undefined],
        ['agents.defaults.fallbackModels.0.modle', 'model'],
        ['modelPresets.fast.temprature', 'temperature'],
        ['providers.openai.apiKye', 'apiKey'],
        ['channels.telegarm', 'telegram'],
        ['channels.sendProgres', 'sendProgress'],
        ['gateway.heartbeat.intervalSec', 'intervalS'],
        ['tools.exec.timout', 'timeout'],
        ['tools.mcpServers.fs.comand', 'command'],
        ['tools.mY', 'my'],
        ['zzzz', undefined],
      ].sort(),
    );
    expect(notices.every((n) => n.kind === 'unknown' && n.text.includes('ignored'))).toBe(true);
  });

  it('checks the keys inside the blocks of the channels this version has, against each channel’s own keys', () => {
    const notices = configNotices(
      {
        channels: {
          telegram: { enabled: false, tokne: 'x', token: 'y', reactEmoji: '👀' },
          discord: { allowChannel: ['1'], workingEmoji: '⏳', proxy: 'http://127.0.0.1:3128' },
          matrix: { sasVerification: true, homeserver: 'https://m.example' },
          qq: { secretz: 1 },
        },
      },
      {},
      undefined,
      channelSchemas(),
    );
    expect(notices.map((n) => [n.kind, n.path, /did you mean `([^`]+)`/.exec(n.text)?.[1]]).sort()).toEqual(
      [
        ['unknown', 'channels.telegram.tokne', 'token'],
        ['unknown', 'channels.discord.allowChannel', 'allowChannels'],
        ['unsupported', 'channels.discord.workingEmoji', undefined],
        ['unsupported', 'channels.discord.proxy', undefined],
        ['unsupported', 'channels.matrix.sasVerification', undefined],
        ['unknown', 'channels.qq.secretz', 'secret'],
      ].sort(),
    );
    // Without the channels' schemas (a caller that has none) their blocks are not judged key by key.
    expect(configNotices({ channels: { telegram: { tokne: 'x' } } }).map((n) => n.path)).toEqual([]);
  });

  it('says when timezone is written but timezoneMode "auto" means the system’s zone is used instead', () => {
    const tokyo = () => 'Asia/Tokyo';
    const notices = (defaults: Record<string, unknown>) =>
      configNotices({ agents: { defaults } }, {}, tokyo).map((n) => n.text);
    expect(notices({ timezoneMode: 'auto', timezone: 'Europe/Berlin' })).toEqual([
      expect.stringMatching(/timezone "Europe\/Berlin" is not used: .*\(Asia\/Tokyo\).*"manual"/),
    ]);
    expect(notices({ timezoneMode: 'auto', timezone: 'Asia/Tokyo' })).toEqual([]);
    expect(notices({ timezoneMode: 'manual', timezone: 'Europe/Berlin' })).toEqual([]);
    expect(notices({ timezone: 'Europe/Berlin' })).toEqual([]);
  });

  it('suggests only near keys', () => {
    expect(closest('modle', ['model', 'provider'])).toBe('model');
    expect(closest('abc', ['model'])).toBeUndefined();
    expect(closest('proivder', ['model', 'provider'])).toBe('provider');
  });
});
