// How long read_file takes on documents: a 100-page PDF (3 KB of text a page) read whole, and page by page the way
// read_file pages it (20 pages a call), plus a DOCX/XLSX/PPTX of similar size; against the baseline of read_file
// on a text file holding the same text, measured in the same process.
//
//   node bench/read-documents.mjs [--runs=N]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadFromSource } from './lib/load-src.mjs';

const runs = Number(process.argv.find((arg) => arg.startsWith('--runs='))?.slice(7) ?? 5);
const m = await loadFromSource(
  [
    "export { createReadFileTool } from './src/tools/filesystem/read-file.js';",
    "export { createPathPolicy } from './src/security/workspace.js';",
    "export { readPdf } from './src/tools/documents/pdf.js';",
    "export { makePdf, makeDocx, makeXlsx, makePptx } from './test/helpers/documents.ts';",
  ],
  'read-documents',
);

const PAGES = 100;
const line = (page, n) => `Page ${page} line ${n}: the quick brown fox jumps over the lazy dog, 0123456789.`;
const pages = Array.from({ length: PAGES }, (_, p) => Array.from({ length: 40 }, (_, n) => line(p + 1, n + 1)));
const workspace = mkdtempSync(join(tmpdir(), 'nb-bench-docs-'));
process.once('exit', () => rmSync(workspace, { recursive: true, force: true }));
const pdf = m.makePdf(pages);
writeFileSync(join(workspace, 'book.pdf'), pdf);
writeFileSync(join(workspace, 'book.txt'), pages.map((lines) => lines.join('\n')).join('\n'));
writeFileSync(join(workspace, 'book.docx'), m.makeDocx(pages.flat()));
writeFileSync(join(workspace, 'book.xlsx'), m.makeXlsx({ Sheet1: pages.flat().map((text, i) => [i + 1, text]) }));
writeFileSync(join(workspace, 'book.pptx'), m.makePptx(pages));
const tool = m.createReadFileTool({ policy: m.createPathPolicy({ workspace, restrictToWorkspace: true }) });
const ctx = () => ({ signal: new AbortController().signal });

async function time(fn) {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function figure(name, fn) {
  const times = [];
  for (let i = 0; i < runs; i++) times.push(await time(fn));
  return { name, ms: median(times), min: Math.min(...times), max: Math.max(...times) };
}

const readAll =
  (path, extra = {}) =>
  async () => {
    const result = await tool.execute({ path, force: true, ...extra }, ctx());
    if (result.isError) throw new Error(`${path}: ${result.content}`);
  };

const rssBefore = process.memoryUsage().rss;
const cold = await time(() => m.readPdf(pdf, { maxPages: PAGES, maxChars: 1e9 }));
const rows = [
  { name: `PDF, ${PAGES} pages whole, first read (loads PDF.js)`, ms: cold, min: cold, max: cold },
  await figure('text file, same text (baseline)', readAll('book.txt', { limit: 100_000 })),
  await figure(`PDF, ${PAGES} pages whole (readPdf)`, () => m.readPdf(pdf, { maxPages: PAGES, maxChars: 1e9 })),
  await figure(`PDF, ${PAGES} pages as 5 read_file calls of 20`, async () => {
    for (let start = 1; start <= PAGES; start += 20) await readAll('book.pdf', { pages: `${start}-${start + 19}` })();
  }),
  await figure('DOCX, same text', readAll('book.docx')),
  await figure('XLSX, same text in 4000 rows', readAll('book.xlsx')),
  await figure(`PPTX, same text in ${PAGES} slides`, readAll('book.pptx')),
];
const baseline = rows[1].ms;
console.log(`read_file on documents (${runs} runs, median [min–max]); PDF ${(pdf.length / 1024).toFixed(0)} KiB`);
for (const row of rows) {
  const spread = `[${row.min.toFixed(1)}–${row.max.toFixed(1)}]`;
  console.log(
    `  ${row.name.padEnd(48)} ${row.ms.toFixed(1).padStart(8)} ms ${spread.padEnd(16)} ×${(row.ms / baseline).toFixed(1)} baseline`,
  );
}
console.log(`  RSS grew by ${((process.memoryUsage().rss - rssBefore) / 1024 / 1024).toFixed(1)} MB over the run`);
