/**
 * Reading MCP failures: which errors mean the connection is gone (reconnect and retry), and one-line messages for
 * the model, the log and `nanobot status`.
 */
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { fenceDetails } from '../security/untrusted.js';

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ERR_STREAM_DESTROYED',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

const errorCode = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};

/**
 * True when the session is gone rather than the request failing: the stdio process exited, the HTTP server restarted
 * and forgot the session (404, or a 400 about the session id), or the socket was refused or reset.
 */
export function isConnectionLost(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof McpError) {
    // -32000 is also the generic "server error" code, so the message has to say the connection closed.
    return error.code === ErrorCode.ConnectionClosed && /connection closed/i.test(error.message);
  }
  if (error instanceof StreamableHTTPError) {
    return error.code === 404 || (error.code === 400 && /session/i.test(error.message));
  }
  const message = error.message;
  if (message === 'Not connected') return true;
  if (/no valid session|session (?:not found|terminated|expired)|unknown session/i.test(message)) return true;
  if (/\(HTTP 404\)/.test(message)) return true;
  const code = errorCode(error) ?? errorCode(error.cause);
  if (code !== undefined && CONNECTION_ERROR_CODES.has(code)) return true;
  return error instanceof TypeError && message === 'fetch failed';
}

export const isTimeout = (error: unknown): boolean =>
  error instanceof McpError && error.code === ErrorCode.RequestTimeout;

/** Why a server could not be started or reached, in words a user can act on. */
export function describeConnectFailure(error: unknown, command: string | undefined, stderrTail: string): string {
  const code = errorCode(error);
  const syscall = (error as { syscall?: unknown } | null)?.syscall;
  if (typeof syscall === 'string' && syscall.startsWith('spawn') && command) {
    if (code === 'ENOENT') return `cannot start "${command}": command not found (check "command" and PATH)`;
    if (code === 'EACCES') return `cannot start "${command}": permission denied`;
  }
  let message = error instanceof Error ? error.message : String(error);
  if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
    message = command ? 'the server process exited before it was ready' : 'the server closed the connection';
  } else if (error instanceof StreamableHTTPError && error.code !== undefined && error.code > 0) {
    message = `the server answered HTTP ${error.code}: ${message.replace(/^Streamable HTTP error: /, '')}`;
  } else if (error instanceof TypeError && message === 'fetch failed') {
    const cause = errorCode(error.cause) ?? (error.cause instanceof Error ? error.cause.message : undefined);
    message = `cannot reach the server${cause ? ` (${cause})` : ''}`;
  }
  const lastLines = stderrTail.split('\n').slice(-3).join(' | ').trim();
  return lastLines ? `${message}; its stderr said: ${lastLines.slice(-400)}` : message;
}

/**
 * The message for a call that failed after the connection's own recovery. The error's text may be the server's own
 * words (a JSON-RPC error message, an HTTP body), so it is fenced like any other content from the server.
 */
export function describeCallFailure(error: unknown, server: string, timeoutS: number): string {
  if (isTimeout(error)) return `MCP server '${server}' did not answer within ${timeoutS}s (toolTimeout).`;
  const message = error instanceof Error ? error.message : String(error);
  const what = error instanceof McpError ? 'returned an error' : 'failed';
  return `MCP server '${server}' ${what}${fenceDetails({ error: message }, `MCP server ${server}`)}`;
}
