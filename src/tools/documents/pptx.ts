/** PPTX: each slide's text (shapes, text boxes, tables) in presentation order, under `--- Slide N ---`. */
import type { TextCollector } from './collector.js';
import { DocumentError } from './kinds.js';
import { OoxmlText } from './ooxml-text.js';
import { mainPart, relationships, walkXml } from './xml.js';
import { openZip } from './zip.js';

export function readPptx(data: Buffer, out: TextCollector): void {
  const zip = openZip(data, 'PPTX');
  const presentationPath = mainPart(zip.read('_rels/.rels'), 'ppt/presentation.xml');
  const presentation = zip.read(presentationPath);
  if (!presentation) throw new DocumentError('not a valid PPTX file (it has no presentation part)');
  const folder = presentationPath.slice(0, presentationPath.lastIndexOf('/') + 1);
  const rels = relationships(zip.read(`${folder}_rels/${presentationPath.slice(folder.length)}.rels`), folder);
  const slideIds: string[] = [];
  walkXml(presentation, {
    open(name, attributes) {
      if (name !== 'sldId') return;
      // Both the slide's number and its relationship are called `id`; the relationship's has a prefix (`r:id`).
      const relId = Object.entries(attributes).find(([key]) => key.endsWith(':id'))?.[1];
      if (relId) slideIds.push(relId);
    },
  });
  slideIds.forEach((relId, index) => {
    if (out.truncated) return;
    const path = rels.get(relId);
    const slide = path ? zip.read(path) : undefined;
    if (!slide) return;
    const lines: string[] = [];
    walkXml(slide, new OoxmlText((block) => lines.push(block), 'PPTX').handlers);
    if (lines.length > 0) out.add(`--- Slide ${index + 1} ---\n${lines.join('\n')}`);
  });
}
