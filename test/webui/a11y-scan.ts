/**
 * One page's accessibility faults: our checker's (a11y-check.js: names, contrast, alt text, duplicate ids) and
 * axe-core's serious and critical violations of the WCAG 2.x A/AA rules. Every browser test of a page uses this.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { findA11yFaults } from './a11y-check.js';

/** axe-core, put into the page by the test (DevTools evaluation is not subject to the page's CSP). */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeWindow {
  axe: {
    run(
      context: unknown,
      options: object,
    ): Promise<{ violations: { id: string; impact?: string | null; nodes: { target: unknown[] }[] }[] }>;
  };
}

/** Each fault as `<where>: <fault>`; an empty list is a page with none. */
export async function a11yFaults(page: Page, where: string): Promise<string[]> {
  const own = await page.evaluate(findA11yFaults);
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(AXE_SOURCE);
  const axe = await page.evaluate(async () => {
    const page = globalThis as unknown as AxeWindow & { document: unknown };
    const result = await page.axe.run(page.document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
      resultTypes: ['violations'],
    });
    return result.violations
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map((violation) => `axe ${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
  });
  return [...own, ...axe].map((fault) => `${where}: ${fault}`);
}
