// Collects figures by section, prints each line as it is measured, and writes RESULTS.md.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { formatValue, Skipped } from './stats.mjs';
import { evaluateTargets } from './targets.mjs';

export const loadAverage = () =>
  os
    .loadavg()
    .map((v) => v.toFixed(2))
    .join(' / ');

export class Report {
  constructor({ print = (line) => process.stdout.write(`${line}\n`) } = {}) {
    this.print = print;
    this.sections = [];
    this.byId = new Map();
  }

  section(title) {
    const section = { title, load: loadAverage(), figures: [], notes: [], started: performance.now() };
    this.sections.push(section);
    this.print(`\n── ${title}   (load average ${section.load})`);
  }

  /** Prints and keeps how long the current section took. */
  endSection() {
    const section = this.sections.at(-1);
    if (!section || section.seconds !== undefined) return;
    section.seconds = (performance.now() - section.started) / 1000;
    this.print(`  (${section.seconds.toFixed(1)} s)`);
  }

  get current() {
    if (!this.sections.length) this.section('misc');
    return this.sections.at(-1);
  }

  /** Records and prints a Figure or a Skipped line. */
  add(figure) {
    this.current.figures.push(figure);
    this.byId.set(figure.id, figure);
    this.print(`  ${figure.line()}`);
    return figure;
  }

  skip(id, reason) {
    return this.add(new Skipped(id, reason));
  }

  note(text) {
    this.current.notes.push(text);
    this.print(`  · ${text}`);
  }

  /** A measured figure by id (undefined when skipped or not run). */
  figure(id) {
    const figure = this.byId.get(id);
    return figure && !(figure instanceof Skipped) && figure.samples.length ? figure : undefined;
  }

  printTargets(quick) {
    const rows = evaluateTargets((id) => this.figure(id));
    this.print(`\n── targets${quick ? ' (quick mode runs smaller workloads: indicative only)' : ''}`);
    for (const row of rows) this.print(`  ${row.status.padEnd(7)} ${row.text}: ${row.measured}`);
    return rows;
  }

  markdown(header, targetRows) {
    const out = ['# Benchmark results', ''];
    out.push(
      'Written by `npm run bench` (bench/run.mjs); each figure is the median of its runs, with min and max. In',
      '"compared", "×r X" is this figure divided by the same figure of X (a baseline or a peer) measured in the same',
      'run: below 1 is better for times and sizes, above 1 for throughput and prefix share.',
      '',
    );
    for (const [key, value] of Object.entries(header)) out.push(`- **${key}:** ${value}`);
    out.push('', '## Targets', '', '| target | measured | status |', '| --- | --- | --- |');
    for (const row of targetRows) out.push(`| ${row.text} | ${row.measured} | ${row.status} |`);
    for (const section of this.sections) {
      const took = section.seconds === undefined ? '' : ` Took ${section.seconds.toFixed(0)} s.`;
      out.push('', `## ${section.title}`, '', `Load average at start: ${section.load}.${took}`, '');
      if (section.figures.length) {
        out.push(
          '| figure | median | min | max | n | compared | note |',
          '| --- | ---: | ---: | ---: | ---: | --- | --- |',
        );
      }
      for (const f of section.figures) {
        if (f instanceof Skipped) {
          out.push(`| ${f.id} | skipped | | | | | ${cellText(f.reason)} |`);
          continue;
        }
        const cell = (v) => formatValue(v, f.unit);
        out.push(
          `| ${f.id} | ${cell(f.median)} | ${cell(f.min)} | ${cell(f.max)} | ${f.samples.length} | ${cellText(f.comparisons.join(', '))} | ${cellText(f.note)} |`,
        );
      }
      if (section.notes.length) out.push('', ...section.notes.map((n) => `- ${cellText(n)}`));
    }
    return `${out.join('\n')}\n`;
  }

  write(path, header, targetRows) {
    writeFileSync(path, this.markdown(header, targetRows));
  }
}

const cellText = (text) => String(text).replaceAll('|', '\\|').replaceAll('\n', ' ');

/** Machine, date, commit and Node version for the results header. */
export function machineHeader(root) {
  const git = (args) => {
    try {
      return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  };
  const commit = git(['rev-parse', '--short', 'HEAD']) || 'unknown';
  const dirty = git(['status', '--porcelain', '--untracked-files=no']) ? ' (with uncommitted changes)' : '';
  const cpus = os.cpus();
  return {
    Date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    Commit: `${commit}${dirty}`,
    Machine: `${cpus[0]?.model ?? 'unknown CPU'} × ${cpus.length}, ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB RAM, ${os.type()} ${os.release()}`,
    Node: process.version,
  };
}
