// The targets, checked against the figures of a run (medians unless said otherwise).
import { formatValue } from './stats.mjs';

const PASSES = { '<': (v, l) => v < l, '≤': (v, l) => v <= l, '≥': (v, l) => v >= l };

/** A target on one figure: `value <cmp> limit`, the value being the median unless `pick` says otherwise. */
const at = (id, cmp, limit, { pick = (f) => f.median, what = 'median' } = {}) => ({
  ids: [id],
  check: (fig) => {
    const f = fig(id);
    if (!f) return undefined;
    const value = pick(f);
    return { value, unit: f.unit, ok: PASSES[cmp](value, limit), what };
  },
});

export const TARGETS = [
  {
    text: 'one-shot turn, two tool calls, instant LLM: ≤ 200 ms above bare node',
    ids: ['one-shot/two-tools/ours', 'startup/bare-node'],
    check: (fig) => {
      const turn = fig('one-shot/two-tools/ours');
      const bare = fig('startup/bare-node');
      if (!turn || !bare) return undefined;
      const value = turn.median - bare.median;
      return { value, unit: 'ms', ok: value <= 200, what: 'median − bare node' };
    },
  },
  { text: 'one-shot turn, two tool calls: ≤ 70 MB peak RSS', ...at('one-shot/two-tools/peak-rss/ours', '≤', 70) },
  {
    text: '10,000-message session: request built in < 20 ms (warm: every turn after the first)',
    ...at('request-build/10000/warm/ours', '<', 20),
  },
  {
    text: '10,000-message session: request built in < 20 ms (cold: first turn, file parsed)',
    ...at('request-build/10000/cold/ours', '<', 20),
  },
  {
    text: 'gateway over WebSocket: nothing lost or reordered',
    ...at('gateway-ws/lost+reordered/ours', '≤', 0, { pick: (f) => f.max, what: 'max' }),
  },
  { text: 'gateway over WebSocket: p99 overhead < 50 ms', ...at('gateway-ws/p99-overhead/ours', '<', 50) },
  { text: 'gateway over WebSocket: peak RSS < 200 MB', ...at('gateway-ws/peak-rss/ours', '<', 200) },
  { text: 'idle gateway RSS < 60 MB', ...at('idle-rss/ours', '<', 60) },
  {
    text: '≥ 95% byte-identical prefix between consecutive requests of a session',
    ...at('prefix-share/ours', '≥', 95, { pick: (f) => f.min, what: 'min over consecutive pairs' }),
  },
  { text: 'core install (npm ci --omit=dev --omit=optional) ≤ 120 MB', ...at('install/core/ours', '≤', 120) },
];

/** One row per target: text, measured value and status (met / MISSED / not run). */
export function evaluateTargets(fig) {
  return TARGETS.map((target) => {
    const result = target.check(fig);
    if (!result) return { text: target.text, measured: 'not measured in this run', status: 'not run' };
    return {
      text: target.text,
      measured: `${formatValue(result.value, result.unit)} (${result.what})`,
      status: result.ok ? 'met' : 'MISSED',
    };
  });
}
