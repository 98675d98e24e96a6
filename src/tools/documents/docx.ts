/** DOCX: the main document's paragraphs and tables, in order. */
import type { TextCollector } from './collector.js';
import { DocumentError } from './kinds.js';
import { OoxmlText } from './ooxml-text.js';
import { mainPart, walkXml } from './xml.js';
import { openZip } from './zip.js';

export function readDocx(data: Buffer, out: TextCollector): void {
  const zip = openZip(data, 'DOCX');
  const document = zip.read(mainPart(zip.read('_rels/.rels'), 'word/document.xml'));
  if (!document) throw new DocumentError('not a valid DOCX file (it has no document part)');
  const body = new OoxmlText((block) => out.add(block), 'DOCX');
  walkXml(document, body.handlers, () => out.truncated);
}
