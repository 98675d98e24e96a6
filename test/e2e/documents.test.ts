/**
 * read_file on documents through `nanobot agent -m` of the installed package (no node_modules): PDF.js and the Office
 * readers must be inside dist/, and PDF.js must not reach for a worker file, a wasm or a font file that is not there.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { makeDocx, makePdf, makePptx, makeXlsx } from '../helpers/documents.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { homeWith, lastToolResult, nanobot, removeInstalledCopy } from './harness.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});
afterAll(removeInstalledCopy);

const call = (args: Record<string, unknown>) => ({ toolCalls: [{ name: 'read_file', arguments: args }] });

describe('nanobot agent -m (installed package): read_file on documents', () => {
  it('reads a PDF page range, a DOCX table, XLSX sheets and PPTX slides', async () => {
    fake = await startFakeLLM([
      call({ path: 'report.pdf', pages: '2' }),
      call({ path: 'report.pdf' }),
      call({ path: 'secret.pdf' }),
      call({ path: 'plan.docx' }),
      call({ path: 'budget.xlsx' }),
      call({ path: 'deck.pptx' }),
      { text: 'Read them all.' },
    ]);
    const { home, workspace } = homeWith(fake.url);
    writeFileSync(join(workspace, 'report.pdf'), makePdf([['First page'], ['Second page', 'with two lines']]));
    writeFileSync(join(workspace, 'secret.pdf'), makePdf([['hidden']], { userPassword: 'pw' }));
    writeFileSync(
      join(workspace, 'plan.docx'),
      makeDocx([
        'Plan',
        {
          table: [
            ['Task', 'Owner'],
            ['Ship', 'Ana'],
          ],
        },
      ]),
    );
    writeFileSync(
      join(workspace, 'budget.xlsx'),
      makeXlsx({
        Costs: [
          ['Item', 'Amount'],
          ['Rent', 1200],
        ],
        Notes: [['ok']],
      }),
    );
    writeFileSync(join(workspace, 'deck.pptx'), makePptx([['Hello'], ['Bye']]));

    const result = await nanobot(['agent', '-m', 'read my documents'], home);
    expect(result.stderr).not.toMatch(/Error|Warning|worker/i);
    expect({ code: result.code, stdout: result.stdout.trim() }).toEqual({ code: 0, stdout: 'Read them all.' });

    const [pageTwo, whole, secret, docx, xlsx, pptx] = fake.requests.slice(1).map(lastToolResult);
    expect(pageTwo).toBe('--- Page 2 ---\nSecond page\nwith two lines');
    expect(whole).toBe('--- Page 1 ---\nFirst page\n\n--- Page 2 ---\nSecond page\nwith two lines');
    expect(secret).toMatch(/^Error: Cannot read secret\.pdf: the PDF is encrypted/);
    expect(docx).toBe('Plan\n\n| Task | Owner |\n| --- | --- |\n| Ship | Ana |');
    expect(xlsx).toBe(
      '--- Sheet: Costs ---\n| Item | Amount |\n| --- | --- |\n| Rent | 1200 |\n\n--- Sheet: Notes ---\n| ok |\n| --- |',
    );
    expect(pptx).toBe('--- Slide 1 ---\nHello\n\n--- Slide 2 ---\nBye');
  });
});
