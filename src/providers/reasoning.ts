/**
 * `reasoningEffort` on the OpenAI chat wire, per vendor (nanobot's `_build_kwargs`): the effort field itself
 * (`reasoning_effort`, OpenRouter's `reasoning: {effort}`, vendor vocabularies), the vendor's thinking switch
 * (`thinking: {type}`, `enable_thinking`, `reasoning_split`), whether `temperature` may be sent, and whether replayed
 * assistant turns need an empty `reasoning_content` (DeepSeek/Kimi thinking mode rejects history without it).
 */
import type { ProviderQuirks } from './registry.js';
import type { ThinkingStyle } from './wire-settings.js';

/** Lower-cased effort, or undefined when none was asked for; DashScope's "minimum" is read as "minimal". */
export function normalizeEffort(effort: string | null | undefined): string | undefined {
  const key = effort?.trim().toLowerCase();
  if (!key) return undefined;
  return key === 'minimum' ? 'minimal' : key;
}

/** The efforts that mean "do not think" for a vendor's on/off switch. */
export function thinkingEnabled(effort: string): boolean {
  return effort !== 'none' && effort !== 'minimal' && effort !== 'off';
}

const slugOf = (model: string): string => model.toLowerCase().split('/').pop() ?? '';

const KIMI_K3 = 'kimi-k3';
/** Kimi models with a thinking switch; they reject `reasoning_effort` next to it. */
const KIMI_THINKING = new Set([
  'kimi-k2.5',
  'kimi-k2.6',
  'kimi-k2.7',
  'kimi-k2.7-code',
  'kimi-k2.7-code-highspeed',
  'k2.6-code-preview',
]);
/** Kimi models that always think: "disable thinking" would be refused. */
const KIMI_ALWAYS_THINKING = new Set(['kimi-k2.7-code', 'kimi-k2.7-code-highspeed']);
const MIMO_THINKING = new Set(['mimo-v2.5-pro', 'mimo-v2.5', 'mimo-v2-pro', 'mimo-v2-omni']);
const QWEN_THINKING = new Set([
  'qwen3.7-max',
  'qwen3.7-plus',
  'qwen3.6-max-preview',
  'qwen3.6-plus',
  'qwen3.6-flash',
  'qwen3.5-plus',
  'qwen3.5-flash',
]);

/** A thinking switch the model itself needs, whichever provider serves it (e.g. Kimi behind a gateway). */
export function modelThinkingStyle(model: string): ThinkingStyle | undefined {
  const slug = slugOf(model);
  if (KIMI_THINKING.has(slug) || MIMO_THINKING.has(slug)) return 'thinking_type';
  if (QWEN_THINKING.has(slug)) return 'enable_thinking';
  return undefined;
}

/** OpenAI's reasoning families (o1/o3/o4, gpt-5) and Kimi K3 need `max_completion_tokens`. */
export function needsMaxCompletionTokens(model: string): boolean {
  const slug = slugOf(model);
  return slug === KIMI_K3 || slug.includes('gpt-5') || /^o[134](?:$|[-.])/.test(slug);
}

export interface ReasoningInput {
  /** Registry name of the provider (vendor-specific rules key on it). */
  provider: string;
  quirks: ProviderQuirks;
  /** The model name sent upstream. */
  model: string;
  effort: string | null | undefined;
  /** `providers.<name>.thinkingStyle`: overrides the registry's style (for endpoints we cannot recognise). */
  thinkingStyle?: ThinkingStyle;
}

export interface ReasoningPlan {
  /** Request-body fields to add. */
  fields: Record<string, unknown>;
  /** Add `reasoning_content: ""` to replayed assistant messages that have none. */
  backfillReasoning: boolean;
  /** Whether the model accepts a custom `temperature`. */
  temperature: boolean;
}

export function planReasoning(input: ReasoningInput): ReasoningPlan {
  const { quirks, model } = input;
  const slug = slugOf(model);
  const lower = model.toLowerCase();
  let semantic = normalizeEffort(input.effort);
  let wire = semantic;
  const fields: Record<string, unknown> = {};

  // Kimi K3 always reasons and only takes "max"; "none"/"minimal" keep the server default.
  if (slug === KIMI_K3 && semantic) {
    if (thinkingEnabled(semantic)) semantic = wire = 'max';
    else wire = undefined;
  }
  // DashScope accepts "minimum", not "minimal".
  if (input.provider === 'dashscope' && semantic === 'minimal') wire = 'minimum';
  const implicit = quirks.noReasoningEffortModels?.some((m) => lower.includes(m)) ?? false;
  if (!implicit && semantic && quirks.reasoningEffortMap) {
    const mapped = quirks.reasoningEffortMap[semantic];
    if (mapped !== undefined) {
      wire = mapped || undefined;
      semantic = mapped || 'none';
    }
  }
  // "none" is never sent as an effort: several vendors reject it, and leaving it out means the same.
  if (!implicit && wire && semantic !== 'none') {
    if (quirks.reasoningParam === 'reasoning_object') fields.reasoning = { effort: wire };
    else fields.reasoning_effort = wire;
  }

  const styles = [input.thinkingStyle ?? quirks.thinkingStyle, modelThinkingStyle(model)].filter(
    (style, index, all): style is ThinkingStyle => style !== undefined && all.indexOf(style) === index,
  );
  // The switch is only sent when an effort is configured, so an unset effort keeps each vendor's default.
  if (semantic) {
    const enabled = thinkingEnabled(semantic);
    for (const style of styles) {
      if (!enabled && KIMI_ALWAYS_THINKING.has(slug)) continue;
      Object.assign(fields, thinkingSwitch(style, enabled));
    }
    // Moonshot refuses `reasoning_effort` next to its own thinking switch.
    if (KIMI_THINKING.has(slug)) delete fields.reasoning_effort;
  }

  const explicitThinking = semantic !== undefined && thinkingEnabled(semantic) && styles.length > 0;
  // DeepSeek V4 / reasoner think without being asked; their history needs the field all the same.
  const implicitDeepSeek =
    input.provider === 'deepseek' &&
    (semantic === undefined || thinkingEnabled(semantic)) &&
    (lower.includes('deepseek-v4') || lower.includes('deepseek-reasoner'));

  return {
    fields,
    backfillReasoning: explicitThinking || implicitDeepSeek,
    temperature: acceptsTemperature(model, semantic, quirks),
  };
}

function thinkingSwitch(style: ThinkingStyle, enabled: boolean): Record<string, unknown> {
  if (style === 'thinking_type') return { thinking: { type: enabled ? 'enabled' : 'disabled' } };
  if (style === 'enable_thinking') return { enable_thinking: enabled };
  return { reasoning_split: enabled };
}

/** OpenAI's reasoning families reject `temperature`, as does any model while it reasons; Kimi K3 fixes its own. */
export function acceptsTemperature(model: string, effort: string | undefined, quirks: ProviderQuirks = {}): boolean {
  const lower = model.toLowerCase();
  const slug = slugOf(model);
  if (slug === KIMI_K3) return false;
  if (quirks.omitTemperatureModels?.some((m) => lower.includes(m))) return false;
  if (effort && effort !== 'none') return false;
  return !/^(o\d|gpt-5)/.test(slug);
}
