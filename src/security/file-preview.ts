/**
 * A text preview of a workspace file for the WebUI (nanobot's `/api/sessions/<key>/file-preview`): the path the
 * agent wrote or sent, in any of the spellings a chat shows it (relative, absolute inside the workspace, `file://`
 * URL, percent-encoded, with a `:line[:col]` suffix), read through the workspace-file layer, so nothing outside the
 * workspace is ever opened — not by `..`, not by a symlink, not by an absolute path — and only a regular file is.
 */
import path from 'node:path';
import { isNotFound, WorkspaceEscapeError, WorkspaceFileTypeError, WorkspaceFs } from './workspace-fs.js';

/** nanobot's cap: a preview is the start of a file, not a download. */
export const MAX_PREVIEW_BYTES = 384 * 1024;
const MAX_PATH_LENGTH = 4096;
/** nanobot calls a file binary when its first 4 KiB hold a NUL. */
const BINARY_SNIFF_BYTES = 4096;

export class FilePreviewError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 415 | 500,
    message: string,
  ) {
    super(message);
    this.name = 'FilePreviewError';
  }
}

export interface FilePreview {
  /** The file's real path. */
  path: string;
  /** Relative to the workspace, `/`-separated. */
  displayPath: string;
  content: string;
  size: number;
  truncated: boolean;
  language: string;
}

/** The path a link or chat text names, as nanobot reads it; '' when there is none. */
export function cleanPreviewPath(raw: string | null | undefined): string {
  let value = (raw ?? '').trim();
  if (!value) return '';
  try {
    if (value.startsWith('file://')) {
      value = decodeURIComponent(new URL(value).pathname);
      if (/^\/[A-Za-z]:[\\/]/.test(value)) value = value.slice(1);
    } else value = decodeURIComponent(value);
  } catch {
    throw new FilePreviewError(400, 'invalid path');
  }
  value = (value.split('?', 1)[0] ?? '').split('#', 1)[0]?.trim() ?? '';
  if (!/^[A-Za-z]:[\\/]/.test(value)) value = value.replace(/:\d+(?::\d+)?$/, '');
  return value;
}

/**
 * The start of `raw` (at most `maxBytes`) as text, confined to `workspace`. `probe`: only check that it could be
 * previewed (reads 4 KiB). Throws FilePreviewError with nanobot's status: 400 bad path, 403 outside the workspace,
 * 404 missing or not a regular file, 415 binary.
 */
export function readFilePreview(
  workspace: string,
  raw: string | null | undefined,
  options: { maxBytes?: number; probe?: boolean } = {},
): FilePreview {
  const wanted = cleanPreviewPath(raw);
  if (!wanted) throw new FilePreviewError(400, 'missing path');
  if (wanted.length > MAX_PATH_LENGTH) throw new FilePreviewError(400, 'path is too long');
  if (wanted.includes('\0')) throw new FilePreviewError(400, 'invalid path');
  const wfs = new WorkspaceFs(workspace);
  let file: ReturnType<WorkspaceFs['openFile']>;
  try {
    file = wfs.openFile(wanted);
  } catch (error) {
    throw refusal(error);
  }
  try {
    const maxBytes = options.maxBytes ?? MAX_PREVIEW_BYTES;
    const bytes = file.read(options.probe ? BINARY_SNIFF_BYTES : maxBytes + 1, 0);
    if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) {
      throw new FilePreviewError(415, 'binary files cannot be previewed');
    }
    const shown = bytes.subarray(0, maxBytes);
    return {
      path: file.realPath,
      displayPath: path.relative(wfs.root, file.realPath).split(path.sep).join('/') || path.basename(file.realPath),
      content: options.probe ? '' : shown.toString('utf8'),
      size: file.size,
      truncated: !options.probe && bytes.length > maxBytes,
      language: languageOf(file.realPath),
    };
  } catch (error) {
    if (error instanceof FilePreviewError) throw error;
    throw new FilePreviewError(500, 'failed to read file');
  } finally {
    file.close();
  }
}

function refusal(error: unknown): FilePreviewError {
  if (error instanceof WorkspaceEscapeError) return new FilePreviewError(403, 'file is outside the current workspace');
  if (error instanceof WorkspaceFileTypeError) return new FilePreviewError(404, 'file not found');
  const code = (error as { code?: unknown } | null)?.code;
  if (isNotFound(error) || code === 'ENOTDIR' || code === 'EISDIR') return new FilePreviewError(404, 'file not found');
  return new FilePreviewError(400, 'invalid path');
}

const LANGUAGES: Record<string, string> = {
  cjs: 'javascript',
  css: 'css',
  cts: 'typescript',
  html: 'html',
  js: 'javascript',
  json: 'json',
  jsonl: 'json',
  jsx: 'jsx',
  md: 'markdown',
  mdx: 'markdown',
  mjs: 'javascript',
  mts: 'typescript',
  py: 'python',
  pyi: 'python',
  scss: 'scss',
  sh: 'bash',
  toml: 'toml',
  ts: 'typescript',
  tsx: 'tsx',
  yaml: 'yaml',
  yml: 'yaml',
};

/** nanobot's language tag for the code view: by extension, else the extension itself, else `text`. */
function languageOf(file: string): string {
  const name = path.basename(file).toLowerCase();
  if (name === 'dockerfile') return 'dockerfile';
  const ext = path.extname(name).slice(1);
  return LANGUAGES[ext] ?? (ext || 'text');
}
