/**
 * AWS Bedrock through the Converse API (`ConverseStream`), with `@aws-sdk/client-bedrock-runtime` — an optional
 * dependency loaded on the first request. Credentials: a Bedrock API key (`providers.bedrock.apiKey` or
 * AWS_BEARER_TOKEN_BEDROCK) as a bearer token, otherwise the AWS credential chain (environment, `profile`, SSO…).
 * Region: `providers.bedrock.region`, else the cross-region prefix of the model id (`eu.anthropic…`), else the
 * SDK's own resolution (AWS_REGION, the profile), else us-east-1. `apiBase` overrides the endpoint.
 */
import type {
  BedrockRuntimeClient,
  BedrockRuntimeClientConfig,
  ConverseStreamCommand,
  ConverseStreamOutput,
} from '@aws-sdk/client-bedrock-runtime';
import { errorMessage, UserError } from '../util/errors.js';
import { importOnDemand } from '../util/on-demand.js';
import { buildConverseRequest } from './bedrock-request.js';
import { providerErrorFromStatus, toProviderError } from './errors.js';
import { failMessage, finishMessage, type MessageBlocks } from './message-blocks.js';
import { DEFAULT_TIMEOUT_MS, type ProviderOptions } from './options.js';
import { upstreamModelName } from './registry.js';
import type { ResolvedProvider } from './resolve.js';
import { errorResponse, retryingProvider } from './retry.js';
import type { WireWatch } from './stream-watch.js';
import type { ChatRequest, LLMProvider, LLMResponse, ProviderError, StreamEvent, Usage } from './types.js';
import { type WireSettings, wireSettings } from './wire-settings.js';

export const BEDROCK_PACKAGE = '@aws-sdk/client-bedrock-runtime';
const DEFAULT_REGION = 'us-east-1';
/** Cross-region inference profile prefixes and a region that serves them. */
const PROFILE_REGIONS: Readonly<Record<string, string>> = {
  us: 'us-east-1',
  eu: 'eu-west-1',
  ap: 'ap-northeast-1',
  apac: 'ap-northeast-1',
  global: 'us-east-1',
};

type BedrockSdk = {
  BedrockRuntimeClient: typeof BedrockRuntimeClient;
  ConverseStreamCommand: typeof ConverseStreamCommand;
};

/** Test seam: how the SDK is loaded (a failing loader stands for the package not being installed). */
export interface BedrockSeams {
  loadSdk?: () => Promise<BedrockSdk>;
}

interface Connection {
  client: BedrockRuntimeClient;
  Command: typeof ConverseStreamCommand;
}

export function createBedrockProvider(
  resolved: ResolvedProvider,
  opts: ProviderOptions = {},
  seams: BedrockSeams = {},
): LLMProvider {
  const settings = wireSettings(resolved.settings);
  return retryingProvider(
    resolved.name,
    opts,
    () => connect(resolved, settings, opts, seams),
    async (connecting, request, emit, watch) => {
      const connection = await connecting;
      if ('kind' in connection) return errorResponse(connection);
      return streamOnce(connection, resolved, request, emit, watch);
    },
  );
}

/** The SDK is installed on demand (src/util/on-demand.ts): next to nanobot, or in ~/.nanobot/packages. */
const loadBedrockSdk = (direct: () => Promise<BedrockSdk>): Promise<BedrockSdk> =>
  importOnDemand({
    direct,
    specifier: BEDROCK_PACKAGE,
    feature: 'AWS Bedrock',
    installWith: 'nanobot provider install bedrock',
  });

async function connect(
  resolved: ResolvedProvider,
  settings: WireSettings,
  opts: ProviderOptions,
  seams: BedrockSeams,
): Promise<Connection | ProviderError> {
  let sdk: BedrockSdk;
  try {
    sdk = await loadBedrockSdk(seams.loadSdk ?? (() => import('@aws-sdk/client-bedrock-runtime')));
  } catch (err) {
    const why = err instanceof UserError ? `${err.message} ${err.hint ?? ''}`.trim() : errorMessage(err);
    return { kind: 'bad_request', message: `${why} (Or reach the model through another provider.)`, retryable: false };
  }
  const apiKey = resolved.apiKey;
  const endpoint = resolved.settings.apiBase?.trim();
  const config: BedrockRuntimeClientConfig = {
    // withRetry retries; the SDK's own attempts would multiply them.
    maxAttempts: 1,
    requestHandler: { requestTimeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS },
    ...(endpoint ? { endpoint } : {}),
    ...(apiKey ? { token: { token: apiKey }, authSchemePreference: ['httpBearerAuth'] } : {}),
    ...(settings.profile ? { profile: settings.profile } : {}),
  };
  const region = settings.region ?? regionFromModel(upstreamModelName(resolved.spec.modelName, resolved.model));
  const make = (withRegion: string | undefined) =>
    withoutSdkNotices(() => new sdk.BedrockRuntimeClient({ ...config, ...(withRegion ? { region: withRegion } : {}) }));
  let client = make(region ?? regionFromEndpoint(endpoint));
  if (!region && !(await client.config.region().then(Boolean, () => false))) {
    client.destroy();
    client = make(DEFAULT_REGION);
  }
  return { client, Command: sdk.ConverseStreamCommand };
}

/** "eu.anthropic.claude-…" is a cross-region profile; any region of that geography serves it. */
export function regionFromModel(modelId: string): string | undefined {
  const prefix = modelId.split('.')[0]?.toLowerCase() ?? '';
  return PROFILE_REGIONS[prefix];
}

function regionFromEndpoint(endpoint: string | undefined): string | undefined {
  return endpoint ? /bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com/i.exec(endpoint)?.[1] : undefined;
}

/** The SDK warns on every Node below 22 with process.emitWarning; in a chat UI it would interleave with the answer. */
function withoutSdkNotices<T>(create: () => T): T {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (text.startsWith('NodeVersionSupportWarning')) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return create();
  } finally {
    process.emitWarning = emitWarning;
  }
}

async function streamOnce(
  connection: Connection,
  resolved: ResolvedProvider,
  request: ChatRequest,
  emit: (event: StreamEvent) => void,
  watch: WireWatch,
): Promise<LLMResponse> {
  const accumulator = new ConverseAccumulator(emit);
  try {
    const command = new connection.Command(buildConverseRequest(resolved, request));
    const output = await connection.client.send(command, { abortSignal: request.signal });
    for await (const event of watch(output.stream ?? [])) {
      const failure = accumulator.add(event);
      if (failure) return accumulator.fail(failure);
    }
  } catch (error) {
    return accumulator.fail(bedrockError(error, request.signal));
  }
  return accumulator.finish();
}

class ConverseAccumulator {
  private readonly blocks: MessageBlocks = new Map();
  private stopReason: string | undefined;
  private usage: Usage | undefined;

  constructor(private readonly emit: (event: StreamEvent) => void) {}

  add(event: ConverseStreamOutput): ProviderError | undefined {
    if (event.contentBlockStart) {
      const toolUse = event.contentBlockStart.start?.toolUse;
      const index = event.contentBlockStart.contentBlockIndex ?? this.blocks.size;
      if (toolUse?.toolUseId && toolUse.name) {
        this.blocks.set(index, { type: 'tool_use', id: toolUse.toolUseId, name: toolUse.name, json: '' });
        this.emit({ type: 'tool-call-start', id: toolUse.toolUseId, name: toolUse.name });
      }
    } else if (event.contentBlockDelta) {
      this.applyDelta(event.contentBlockDelta.contentBlockIndex ?? 0, event.contentBlockDelta.delta);
    } else if (event.messageStop) {
      this.stopReason = event.messageStop.stopReason ?? 'end_turn';
    } else if (event.metadata?.usage) {
      const { inputTokens, outputTokens, cacheReadInputTokens, cacheWriteInputTokens } = event.metadata.usage;
      const cacheRead = cacheReadInputTokens ?? 0;
      const cacheWrite = cacheWriteInputTokens ?? 0;
      this.usage = {
        promptTokens: (inputTokens ?? 0) + cacheRead + cacheWrite,
        completionTokens: outputTokens ?? 0,
        ...(cacheRead ? { cachedTokens: cacheRead } : {}),
        ...(cacheWrite ? { cacheWriteTokens: cacheWrite } : {}),
      };
    } else {
      const exception = Object.entries(event).find(([key, value]) => key.endsWith('Exception') && value);
      if (exception) {
        const [key, value] = exception;
        const name = key.charAt(0).toUpperCase() + key.slice(1);
        return exceptionError(name, (value as { message?: string }).message ?? name);
      }
    }
    return undefined;
  }

  finish(): LLMResponse {
    return finishMessage(this.blocks, { stopReason: this.stopReason, usage: this.usage });
  }

  fail(error: ProviderError): LLMResponse {
    return failMessage(this.blocks, error, this.usage);
  }

  private applyDelta(index: number, delta: NonNullable<ConverseStreamOutput['contentBlockDelta']>['delta']): void {
    if (!delta) return;
    const block = this.blocks.get(index);
    if (typeof delta.text === 'string' && delta.text) {
      const text = block?.type === 'text' ? block : { type: 'text' as const, text: '' };
      this.blocks.set(index, text);
      text.text += delta.text;
      this.emit({ type: 'text-delta', text: delta.text });
    } else if (delta.toolUse && block?.type === 'tool_use') {
      block.json += delta.toolUse.input ?? '';
    } else if (delta.reasoningContent) {
      const { text, signature, redactedContent } = delta.reasoningContent;
      if (redactedContent) {
        this.blocks.set(index, { type: 'redacted_thinking', data: Buffer.from(redactedContent).toString('base64') });
        return;
      }
      const thinking = block?.type === 'thinking' ? block : { type: 'thinking' as const, thinking: '', signature: '' };
      this.blocks.set(index, thinking);
      if (text) {
        thinking.thinking += text;
        this.emit({ type: 'reasoning-delta', text });
      }
      if (signature) thinking.signature += signature;
    }
  }
}

/** Bedrock's errors by exception name; they carry an HTTP status only when the request itself failed. */
function exceptionError(name: string, message: string, status?: number): ProviderError {
  switch (name) {
    case 'ThrottlingException':
      return {
        kind: 'rate_limit',
        message: `Rate limited by Bedrock: ${message}`,
        retryable: true,
        status: status ?? 429,
      };
    case 'ServiceUnavailableException':
    case 'InternalServerException':
    case 'ModelStreamErrorException':
    case 'ModelNotReadyException':
      return {
        kind: 'server',
        message: `Bedrock is unavailable: ${message}`,
        retryable: true,
        ...(status ? { status } : {}),
      };
    case 'ModelTimeoutException':
      return { kind: 'timeout', message: `Bedrock timed out: ${message}`, retryable: true };
    case 'AccessDeniedException':
    case 'UnrecognizedClientException':
    case 'ExpiredTokenException':
      return {
        kind: 'auth',
        message: `Bedrock refused the credentials (check the API key, or the IAM permissions of the AWS profile): ${message}`,
        retryable: false,
        status: status ?? 403,
      };
    default:
      // ValidationException ("Input is too long…" included), ResourceNotFoundException…
      return providerErrorFromStatus(status ?? 400, message);
  }
}

function bedrockError(error: unknown, signal: AbortSignal | undefined): ProviderError {
  if (signal?.aborted) return toProviderError(error, signal);
  const details = (typeof error === 'object' && error !== null ? error : {}) as {
    name?: unknown;
    message?: unknown;
    $metadata?: { httpStatusCode?: unknown };
  };
  const name = typeof details.name === 'string' ? details.name : '';
  const message = typeof details.message === 'string' ? details.message : String(error);
  if (name === 'CredentialsProviderError' || /could not load credentials/i.test(message)) {
    return {
      kind: 'auth',
      message:
        'No AWS credentials for Bedrock: set providers.bedrock.apiKey (a Bedrock API key), or configure the AWS ' +
        'credential chain (aws configure, AWS_PROFILE or providers.bedrock.profile).',
      retryable: false,
    };
  }
  const status = details.$metadata?.httpStatusCode;
  if (name.endsWith('Exception')) return exceptionError(name, message, typeof status === 'number' ? status : undefined);
  return toProviderError(error, signal);
}
