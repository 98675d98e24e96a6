/**
 * Text of WordprocessingML and DrawingML bodies (DOCX documents, PPTX slides): both spell paragraphs `p`, runs `r`,
 * text `t`, tables `tbl`/`tr`/`tc`. Paragraphs come out as lines (Word headings as `#`, list items as `- `), tables as
 * Markdown tables; a table nested in a cell is flattened into that cell.
 */
import { markdownTable } from './collector.js';
import { DocumentError } from './kinds.js';
import { attribute, type XmlHandlers } from './xml.js';

export const MAX_TABLE_CELLS = 100_000;
export const MAX_TABLE_DEPTH = 8;

interface Paragraph {
  text: string;
  heading?: number;
  listItem?: boolean;
}

interface Table {
  rows: string[][];
  row?: string[];
  cell?: string[];
}

export class OoxmlText {
  /** A stack: a text box's paragraphs sit inside a run of the paragraph that anchors it. */
  private readonly paragraphs: Paragraph[] = [];
  private inText = false;
  private inRun = 0;
  private readonly tables: Table[] = [];
  private cells = 0;

  /** `emit` receives each top-level block's text: a paragraph line or a whole Markdown table. */
  constructor(
    private readonly emit: (block: string) => void,
    private readonly label: string,
  ) {}

  readonly handlers: XmlHandlers = {
    open: (name, attributes) => {
      switch (name) {
        case 'p':
          this.paragraphs.push({ text: '' });
          break;
        case 'pStyle': {
          const style = attribute(attributes, 'val') ?? '';
          const level = /^heading\s?([1-6])$/i.exec(style)?.[1];
          const paragraph = this.paragraphs.at(-1);
          if (paragraph && level) paragraph.heading = Number(level);
          else if (paragraph && /^title$/i.test(style)) paragraph.heading = 1;
          break;
        }
        case 'numPr':
          if (this.paragraphs.length > 0) (this.paragraphs.at(-1) as Paragraph).listItem = true;
          break;
        case 'r':
          this.inRun++;
          break;
        case 't':
          this.inText = true;
          break;
        case 'tab':
          if (this.inRun > 0) this.append('\t');
          break;
        case 'br':
        case 'cr':
          this.append('\n');
          break;
        case 'tbl':
          if (this.tables.length >= MAX_TABLE_DEPTH) {
            throw new DocumentError(`the ${this.label} file nests tables more than ${MAX_TABLE_DEPTH} deep`);
          }
          this.tables.push({ rows: [] });
          break;
        case 'tr': {
          const table = this.tables.at(-1);
          if (table) table.row = [];
          break;
        }
        case 'tc': {
          const table = this.tables.at(-1);
          if (++this.cells > MAX_TABLE_CELLS) {
            throw new DocumentError(`the ${this.label} file has more than ${MAX_TABLE_CELLS} table cells`);
          }
          if (table) table.cell = [];
          break;
        }
      }
    },
    text: (text) => {
      if (this.inText) this.append(text);
    },
    close: (name) => {
      switch (name) {
        case 't':
          this.inText = false;
          break;
        case 'r':
          this.inRun = Math.max(0, this.inRun - 1);
          break;
        case 'p':
          this.endParagraph();
          break;
        case 'tc': {
          const table = this.tables.at(-1);
          if (table?.cell) table.row?.push(table.cell.join('\n'));
          if (table) table.cell = undefined;
          break;
        }
        case 'tr': {
          const table = this.tables.at(-1);
          if (table?.row?.some((cell) => cell.trim() !== '')) table.rows.push(table.row);
          if (table) table.row = undefined;
          break;
        }
        case 'tbl':
          this.endTable();
          break;
      }
    },
  };

  private append(text: string): void {
    const paragraph = this.paragraphs.at(-1);
    if (paragraph) paragraph.text += text;
  }

  private endParagraph(): void {
    const paragraph = this.paragraphs.pop();
    if (!paragraph) return;
    const text = paragraph.text.replace(/[ \t]+$/gm, '').trim();
    if (!text) return;
    const cell = this.tables.at(-1)?.cell;
    if (cell) cell.push(text);
    else if (this.tables.length === 0) {
      const prefix = paragraph.heading ? `${'#'.repeat(paragraph.heading)} ` : paragraph.listItem ? '- ' : '';
      this.emit(prefix + text);
    }
  }

  private endTable(): void {
    const table = this.tables.pop();
    if (!table || table.rows.length === 0) return;
    const parentCell = this.tables.at(-1)?.cell;
    if (parentCell) parentCell.push(...table.rows.map((row) => row.join(' | ')));
    else this.emit(markdownTable(table.rows));
  }
}
