/**
 * `GET /api/sessions/<key>/file-preview?path=…[&probe=1]` (nanobot's webui/file_preview.py): the start of a text file
 * the agent wrote or sent, for the WebUI's code view. Confinement to the workspace is src/security/file-preview.ts;
 * `probe=1` answers `{available}` instead of refusing (the client asks before it shows a "preview" link).
 */
import { FilePreviewError, readFilePreview } from '../../security/file-preview.js';
import type { WebUiBackend } from './backend.js';
import { type ApiAnswer, type SessionsApiOptions, sessionKeyFrom } from './sessions-api.js';

const PROBE_REFUSALS = new Set([400, 403, 404, 415]);

export function filePreview(
  backend: WebUiBackend,
  options: SessionsApiOptions,
  rawKey: string,
  params: URLSearchParams,
): ApiAnswer {
  const target = sessionKeyFrom(rawKey, options.channel);
  if ('status' in target) return target;
  const probe = params.get('probe') === '1';
  // The gateway's workspace, not a chat's own scope: a preview never reaches past what the agent's tools may.
  const workspace = backend.workspaceScope().project_path;
  try {
    const preview = readFilePreview(workspace, params.get('path'), { probe });
    if (probe) return { status: 200, body: { available: true } };
    return {
      status: 200,
      body: {
        path: preview.path,
        display_path: preview.displayPath,
        project_path: workspace,
        language: preview.language,
        content: preview.content,
        size: preview.size,
        truncated: preview.truncated,
      },
    };
  } catch (error) {
    if (!(error instanceof FilePreviewError)) throw error;
    if (probe && PROBE_REFUSALS.has(error.status)) return { status: 200, body: { available: false } };
    return { status: error.status, body: { error: error.message } };
  }
}
