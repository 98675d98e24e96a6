/**
 * Azure OpenAI clients. Chat completions go to the deployment named by the model,
 * `<endpoint>/openai/deployments/<deployment>/chat/completions?api-version=…`, through the SDK's AzureOpenAI client
 * (which sends the key as `api-key`). With `apiType: "responses"`, requests go to Azure's v1 Responses endpoint,
 * `<endpoint>/openai/v1/responses`, as nanobot does.
 */
import OpenAI, { AzureOpenAI, type ClientOptions } from 'openai';
import type { ResolvedProvider } from './resolve.js';
import type { WireSettings } from './wire-settings.js';

/** Client options both the plain and the Azure client accept. */
export type CommonClientOptions = Omit<ClientOptions, 'provider' | 'apiKey'> & { apiKey: string };

/** Azure's GA chat-completions API version (the one nanobot pins); `providers.azureOpenai.apiVersion` overrides it. */
export const AZURE_API_VERSION = '2024-10-21';

/** The resource endpoint without any `/openai…` suffix a user may have pasted. */
export function azureEndpoint(apiBase: string): string {
  return apiBase.replace(/\/+$/, '').replace(/\/openai(?:\/v1)?$/, '');
}

export function makeAzureClient(
  resolved: ResolvedProvider,
  settings: WireSettings,
  common: CommonClientOptions,
): OpenAI {
  const endpoint = azureEndpoint(resolved.apiBase);
  if (settings.apiType === 'responses') {
    const headers = { ...common.defaultHeaders, 'api-key': resolved.apiKey ?? '' };
    return new OpenAI({ ...common, baseURL: `${endpoint}/openai/v1`, defaultHeaders: headers });
  }
  return new AzureOpenAI({
    ...common,
    baseURL: `${endpoint}/openai`,
    apiVersion: settings.apiVersion ?? AZURE_API_VERSION,
  });
}
