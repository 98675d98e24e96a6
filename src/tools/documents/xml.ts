/**
 * Streams an OOXML part through htmlparser2 in XML mode. Element names arrive without their namespace prefix
 * (`w:p` and `a:p` are both `p`), and `mc:Fallback` (a second copy of the content for old readers) is skipped.
 */
import { Parser } from 'htmlparser2';

export interface XmlHandlers {
  open?(name: string, attributes: Record<string, string>): void;
  text?(text: string): void;
  close?(name: string): void;
}

const CHUNK = 64 * 1024;

const local = (name: string): string => name.slice(name.indexOf(':') + 1);

/** Walks `xml`; stops early (between chunks) once `stop()` says so, e.g. when the output cap is reached. */
export function walkXml(xml: Buffer, handlers: XmlHandlers, stop: () => boolean = () => false): void {
  let skipping = 0;
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (skipping > 0 || local(name) === 'Fallback') {
          skipping++;
          return;
        }
        handlers.open?.(local(name), attributes);
      },
      ontext(text) {
        if (skipping === 0) handlers.text?.(text);
      },
      onclosetag(name) {
        if (skipping > 0) {
          skipping--;
          return;
        }
        handlers.close?.(local(name));
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  const text = xml.toString('utf8');
  for (let at = 0; at < text.length && !stop(); at += CHUNK) parser.write(text.slice(at, at + CHUNK));
  parser.end();
}

/** An attribute by its local name (`w:val` and `val` both answer to `val`). */
export function attribute(attributes: Record<string, string>, name: string): string | undefined {
  for (const [key, value] of Object.entries(attributes)) if (local(key) === name) return value;
  return undefined;
}

/** The `Id → Target` map of a relationships part, targets resolved against the part's folder. */
export function relationships(xml: Buffer | undefined, folder: string): Map<string, string> {
  const map = new Map<string, string>();
  if (!xml) return map;
  walkXml(xml, {
    open(name, attributes) {
      if (name !== 'Relationship' || attributes.TargetMode === 'External') return;
      const id = attributes.Id;
      const target = attributes.Target;
      if (id && target) map.set(id, resolvePart(folder, target));
    },
  });
  return map;
}

/** `target` (relative to `folder`, or absolute from the package root) as a package path. */
export function resolvePart(folder: string, target: string): string {
  const parts = target.startsWith('/') ? [] : folder.split('/').filter(Boolean);
  for (const piece of target.split('/')) {
    if (piece === '..') parts.pop();
    else if (piece && piece !== '.') parts.push(piece);
  }
  return parts.join('/');
}

/** The main part of a package (word/document.xml…), from its root relationships, else the usual path. */
export function mainPart(rootRels: Buffer | undefined, fallback: string): string {
  let found: string | undefined;
  if (rootRels) {
    walkXml(rootRels, {
      open(name, attributes) {
        if (name === 'Relationship' && attributes.Type?.endsWith('/officeDocument') && attributes.Target) {
          found ??= resolvePart('', attributes.Target);
        }
      },
    });
  }
  return found ?? fallback;
}
