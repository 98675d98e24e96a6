/** The document formats read_file turns into text (the parsers themselves load only when one is read). */
export type DocumentKind = 'pdf' | 'docx' | 'xlsx' | 'pptx';

const KINDS: Record<string, DocumentKind> = { '.pdf': 'pdf', '.docx': 'docx', '.xlsx': 'xlsx', '.pptx': 'pptx' };

/** The document kind of a file name (by extension, as upstream does), or undefined for anything else. */
export function documentKind(fileName: string): DocumentKind | undefined {
  const dot = fileName.lastIndexOf('.');
  return dot < 0 ? undefined : KINDS[fileName.slice(dot).toLowerCase()];
}

/** Why a document could not be read, worded for the model (corrupt, encrypted, over a safety limit…). */
export class DocumentError extends Error {
  override name = 'DocumentError';
}
