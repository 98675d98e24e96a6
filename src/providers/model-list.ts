/**
 * The models an OpenAI-compatible endpoint serves (`GET <apiBase>/models`), for the settings' model picker. Asked
 * only when the user opens the picker; the list is advisory (any model id can still be typed). Failures are data.
 */
import { z } from 'zod';
import { redactSecrets } from '../security/secrets.js';
import { providerFetch } from './http.js';

export interface ListedModel {
  id: string;
  label: string | null;
  owned_by: string | null;
  context_window: number | null;
  description?: string;
}

export type ModelListOutcome =
  | { ok: true; models: ListedModel[] }
  | { ok: false; status: 'not_configured' | 'error'; message: string };

export interface ModelListRequest {
  apiBase: string;
  apiKey?: string;
  /** `x-api-key` instead of a bearer token (an Anthropic-wire endpoint such as MiniMax's). */
  keyHeader?: 'authorization' | 'x-api-key';
  headers?: Record<string, string>;
  fetch?: typeof globalThis.fetch;
  timeoutMs?: number;
}

const CONTEXT_KEYS = ['context_window', 'context_length', 'max_context_length', 'max_model_len', 'max_input_tokens'];
const text = z.string().trim().min(1);
const Row = z.union([text.transform((id) => ({ id }) as Record<string, unknown>), z.record(z.string(), z.unknown())]);
const Body = z.union([z.looseObject({ data: z.array(z.unknown()) }).transform((b) => b.data), z.array(z.unknown())]);
/** A model list longer than this is cut (a gateway lists thousands; the picker filters as the user types). */
const MAX_MODELS = 2000;

export async function listModels(request: ModelListRequest): Promise<ModelListOutcome> {
  const headers: Record<string, string> = { accept: 'application/json', ...request.headers };
  if (request.apiKey) {
    if (request.keyHeader === 'x-api-key') headers['x-api-key'] = request.apiKey;
    else headers.authorization = `Bearer ${request.apiKey}`;
  }
  const url = `${request.apiBase.replace(/\/+$/, '')}/models`;
  let response: Response;
  try {
    response = await (request.fetch ?? providerFetch)(url, {
      headers,
      redirect: 'manual',
      signal: AbortSignal.timeout(request.timeoutMs ?? 10_000),
    });
  } catch (error) {
    const reason = redactSecrets((error as Error).message, request.apiKey ? [request.apiKey] : []);
    return { ok: false, status: 'error', message: `Could not load models: ${reason.slice(0, 300)}` };
  }
  if (response.status === 401 || response.status === 403) {
    return { ok: false, status: 'not_configured', message: 'The provider rejected the configured credential.' };
  }
  if (response.status >= 300) {
    return { ok: false, status: 'error', message: `Model list request failed with HTTP ${response.status}.` };
  }
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    return { ok: false, status: 'error', message: 'Could not load models: the answer is not JSON.' };
  }
  const rows = Body.safeParse(body);
  if (!rows.success) return { ok: false, status: 'error', message: 'Could not load models: no model list.' };
  const seen = new Set<string>();
  const models: ListedModel[] = [];
  for (const raw of rows.data) {
    const model = modelOf(raw);
    if (!model || seen.has(model.id)) continue;
    seen.add(model.id);
    models.push(model);
    if (models.length >= MAX_MODELS) break;
  }
  return { ok: true, models };
}

function modelOf(raw: unknown): ListedModel | undefined {
  const parsed = Row.safeParse(raw);
  if (!parsed.success) return undefined;
  const row = parsed.data;
  const str = (key: string): string | undefined => {
    const value = text.safeParse(row[key]);
    return value.success ? value.data : undefined;
  };
  const id = str('id') ?? str('name') ?? str('model');
  if (!id) return undefined;
  const label = str('display_name') ?? str('label') ?? str('name');
  const description = str('description');
  const contextWindow = CONTEXT_KEYS.map((key) => row[key]).find(
    (value): value is number => typeof value === 'number' && Number.isFinite(value) && value > 0,
  );
  return {
    id,
    label: label && label !== id ? label : null,
    owned_by: str('owned_by') ?? str('owner') ?? str('organization') ?? null,
    context_window: contextWindow === undefined ? null : Math.floor(contextWindow),
    ...(description ? { description } : {}),
  };
}
