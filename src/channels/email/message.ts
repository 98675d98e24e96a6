/**
 * Reading one mail: its headers, whether it was sent by a robot (never answered), which MIME part is the text and which are attachments, and the text itself cleaned
 * of the quoted conversation below it.
 */
import type { MessageStructureObject } from 'imapflow';
import type { AttachmentKind } from '../platform.js';

/** The headers the channel looks at (besides the envelope). */
export const HEADERS_READ = [
  'auto-submitted',
  'precedence',
  'list-id',
  'list-unsubscribe',
  'list-post',
  'x-autoreply',
  'x-autorespond',
  'return-path',
  'authentication-results',
  'from',
  'references',
];

export type Headers = Map<string, string[]>;

/** Raw header lines → lower-case name → values (unfolded, in order). */
export function parseHeaders(raw: Buffer | string | undefined): Headers {
  const headers: Headers = new Map();
  if (!raw) return headers;
  const unfolded = raw.toString('utf8').replace(/\r?\n[ \t]+/g, ' ');
  for (const line of unfolded.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
  }
  return headers;
}

const first = (headers: Headers, name: string) => headers.get(name)?.[0];

const ROBOT_SENDER = /^(mailer-daemon|postmaster|no-?reply|do-?not-?reply|bounces?)([+._-]|$)/i;

/**
 * Why this mail must not be answered (an auto-reply, a bounce, a mailing list, a robot sender), or undefined for
 * a mail a person wrote. Answering those is how mail loops and list spam start (RFC 3834).
 */
export function automatedReason(headers: Headers, from: string, contentType: string): string | undefined {
  const autoSubmitted = first(headers, 'auto-submitted');
  if (autoSubmitted && autoSubmitted.split(';')[0]?.trim().toLowerCase() !== 'no')
    return `it is automatic (Auto-Submitted: ${autoSubmitted})`;
  const precedence = first(headers, 'precedence')?.toLowerCase();
  if (precedence && /^(bulk|list|junk|auto_reply)\b/.test(precedence))
    return `it is bulk mail (Precedence: ${precedence})`;
  if (headers.has('list-id') || headers.has('list-unsubscribe') || headers.has('list-post'))
    return 'it comes from a mailing list';
  if (headers.has('x-autoreply') || headers.has('x-autorespond')) return 'it is an auto-reply';
  if (first(headers, 'return-path')?.replace(/\s/g, '') === '<>') return 'it is a bounce (empty Return-Path)';
  if (contentType.toLowerCase() === 'multipart/report') return 'it is a delivery report';
  const local = from.split('@')[0] ?? '';
  if (ROBOT_SENDER.test(local)) return `${from} is a robot address`;
  return undefined;
}

/** `<a@x> <b@y>` → ids with their brackets. */
export function messageIds(value: string | undefined): string[] {
  return value?.match(/<[^<>\s]+>/g) ?? [];
}

export interface PartRef {
  /** The IMAP body part (`1`, `2.1`…). */
  part: string;
  type: string;
  html: boolean;
}

export interface AttachmentRef {
  part: string;
  type: string;
  name?: string;
  /** Decoded size, estimated from the encoded one. */
  size?: number;
}

/**
 * The text parts worth reading, best first (the plain-text part, then the HTML one: some mailers send an empty plain
 * part beside the HTML), and the attachments of a mail's MIME tree.
 */
export function planParts(root: MessageStructureObject | undefined): {
  texts: PartRef[];
  attachments: AttachmentRef[];
} {
  const leaves: MessageStructureObject[] = [];
  const walk = (node: MessageStructureObject) => {
    if (node.childNodes?.length) for (const child of node.childNodes) walk(child);
    else leaves.push(node);
  };
  if (root) walk(root);
  const isAttachment = (node: MessageStructureObject) =>
    node.disposition?.toLowerCase() === 'attachment' || !/^text\/(plain|html)$/i.test(node.type);
  const body = leaves.filter((node) => !isAttachment(node));
  const texts = ['text/plain', 'text/html']
    .map((type) => body.find((node) => node.type.toLowerCase() === type))
    .filter((node): node is MessageStructureObject => node !== undefined)
    .map((node) => ({
      part: node.part ?? '1',
      type: node.type.toLowerCase(),
      html: node.type.toLowerCase() === 'text/html',
    }));
  const attachments = leaves
    .filter((node) => isAttachment(node) && !/^multipart\//i.test(node.type))
    .map((node) => {
      const name = node.dispositionParameters?.filename ?? node.parameters?.name;
      const size = node.size === undefined ? undefined : decodedSize(node.size, node.encoding);
      return {
        part: node.part ?? '1',
        type: node.type.toLowerCase(),
        ...(name ? { name } : {}),
        ...(size !== undefined ? { size } : {}),
      };
    });
  return { texts, attachments };
}

function decodedSize(encodedSize: number, encoding: string | undefined): number {
  return encoding?.toLowerCase() === 'base64' ? Math.floor((encodedSize * 3) / 4) : encodedSize;
}

export function attachmentKind(mimeType: string): AttachmentKind {
  if (mimeType.startsWith('image/')) return 'image';
  if (mimeType.startsWith('audio/')) return 'audio';
  if (mimeType.startsWith('video/')) return 'video';
  return 'file';
}

/** `image/*`, `*` and exact types, as nanobot's allowedAttachmentTypes. */
export function typeAllowed(mimeType: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => {
    const wanted = pattern.trim().toLowerCase();
    if (wanted === '*' || wanted === '*/*') return true;
    if (wanted.endsWith('/*')) return mimeType.startsWith(wanted.slice(0, -1));
    return mimeType === wanted;
  });
}

/**
 * The new part of a reply: the quoted conversation at its end ("On Mon, Alice wrote:" and `>` lines, or an
 * Outlook "Original Message" block) is already in the agent's history. A mail that is only a quote is kept whole.
 */
export function withoutQuotedTail(body: string): string {
  const lines = body.replace(/\r\n/g, '\n').split('\n');
  const original = lines.findIndex((line) => /^\s*-{2,}\s*Original Message\s*-{2,}\s*$/i.test(line));
  let end = original >= 0 ? original : lines.length;
  let quoted = original >= 0;
  while (end > 0) {
    const line = lines[end - 1] ?? '';
    if (line.startsWith('>')) quoted = true;
    else if (line.trim() !== '') break;
    end -= 1;
  }
  if (!quoted) return body.trim();
  const kept = lines.slice(0, end);
  while (kept.length > 0 && (kept.at(-1) ?? '').trim() === '') kept.pop();
  const last = kept.at(-1) ?? '';
  if (/\bwrote:\s*$/i.test(last)) {
    kept.pop();
    // A long attribution wraps: "On Mon, 1 Jan 2026 at 10:00, Alice <" / "alice@example.com> wrote:".
    if (!/^\s*on\b/i.test(last) && /^\s*on\b/i.test(kept.at(-1) ?? '')) kept.pop();
  }
  return kept.join('\n').trim() || body.trim();
}

export interface MailContext {
  from: string;
  fromName?: string;
  subject: string;
  date?: string;
  body: string;
}

/**
 * What the agent reads: nanobot's `[EMAIL-CONTEXT]` header lines, then the body. A body that starts with a slash
 * command (`/new`, `/stop`) is passed as that command alone, so commands work by mail too.
 */
export function agentText(mail: MailContext): string {
  const firstLine = mail.body.split('\n', 1)[0]?.trim() ?? '';
  if (/^\/[a-z][\w-]*(\s|$)/i.test(firstLine)) return firstLine;
  const from = mail.fromName ? `${mail.fromName} <${mail.from}>` : mail.from;
  return [
    '[EMAIL-CONTEXT] Email received.',
    `From: ${from}`,
    `Subject: ${mail.subject}`,
    ...(mail.date ? [`Date: ${mail.date}`] : []),
    '',
    mail.body || '(empty email body)',
  ].join('\n');
}
