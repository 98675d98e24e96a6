// Figures: a measured quantity with its samples (one per run), printed as median with min/max and compared with a
// baseline or a peer measured in the same run.

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Nearest-rank percentile of unsorted values (p in 0–100). */
export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const DIGITS = { ms: 1, MB: 1, KB: 1, B: 0, tok: 0, '%': 1, 'req/s': 1, 'turns/s': 0, '': 0 };

export function formatValue(value, unit) {
  if (!Number.isFinite(value)) return 'n/a';
  const digits = DIGITS[unit] ?? 1;
  const text = value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return unit === '%' ? `${text}%` : unit ? `${text} ${unit}` : text;
}

export class Figure {
  /**
   * @param {string} id   stable key, e.g. "one-shot/two-tools/ours" (the quick test looks for these)
   * @param {string} unit ms, MB, B, tok, %, req/s …
   * @param {number[]} samples one per run
   * @param {{ note?: string, higherIsBetter?: boolean }} [options]
   */
  constructor(id, unit, samples, options = {}) {
    this.id = id;
    this.unit = unit;
    this.samples = samples.filter((v) => Number.isFinite(v));
    this.note = options.note ?? '';
    this.higherIsBetter = options.higherIsBetter ?? false;
    this.comparisons = [];
  }

  get median() {
    return median(this.samples);
  }
  get min() {
    return Math.min(...this.samples);
  }
  get max() {
    return Math.max(...this.samples);
  }

  /** Adds "×ratio <label>"; with `difference`, also the signed difference ("+57.2 ms over bare node"). */
  compare(label, other, { difference = false } = {}) {
    if (!other || !Number.isFinite(other.median) || !Number.isFinite(this.median) || other.median === 0) return this;
    const ratio = this.median / other.median;
    let text = `×${ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(2)} ${label}`;
    if (difference) {
      const diff = this.median - other.median;
      text += ` (${diff >= 0 ? '+' : '−'}${formatValue(Math.abs(diff), this.unit)})`;
    }
    this.comparisons.push(text);
    return this;
  }

  spread() {
    if (this.samples.length === 0) return 'no samples';
    return `min ${formatValue(this.min, this.unit)}, max ${formatValue(this.max, this.unit)}, n=${this.samples.length}`;
  }

  line() {
    const value = formatValue(this.median, this.unit).padStart(12);
    const parts = [`${this.id.padEnd(40)} ${value}  (${this.spread()})`];
    if (this.comparisons.length) parts.push(this.comparisons.join(', '));
    if (this.note) parts.push(this.note);
    return parts.join('  ');
  }
}

/** A figure that could not be measured, with the reason (printed in place of the value). */
export class Skipped {
  constructor(id, reason) {
    this.id = id;
    this.reason = reason;
  }
  line() {
    return `${this.id.padEnd(40)}      skipped: ${this.reason}`;
  }
}

export const bytesToMb = (bytes) => bytes / 1024 / 1024;
