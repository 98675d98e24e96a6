/**
 * What an edit tool changed, shown in its card: the lines it took out and the lines it put in, read from the call's
 * own arguments (`edit_file`'s old_text/new_text, each of `apply_patch`'s edits, `write_file`'s whole content), as
 * the gateway's file_edit rows count them. Not a diff against the file on disk: the page never reads the workspace
 * for this, and the tool does not report one.
 */
import { useI18n } from '../i18n/react.js';

interface Change {
  path: string;
  removed: string[];
  added: string[];
}

const text = (value: unknown) => (typeof value === 'string' ? value : '');
const linesOf = (value: string) => (value ? value.replace(/\r\n/g, '\n').replace(/\n$/, '').split('\n') : []);

function change(args: Record<string, unknown>, whole = false): Change[] {
  const path = text(args.path);
  if (!path) return [];
  return [
    {
      path,
      removed: whole ? [] : linesOf(text(args.old_text)),
      added: linesOf(text(whole ? args.content : args.new_text)),
    },
  ];
}

/** The changes an edit call makes; empty for other tools or arguments that name no file. */
export function editChanges(tool: string, rawArgs: string): Change[] {
  let args: unknown;
  try {
    args = JSON.parse(rawArgs);
  } catch {
    return [];
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return [];
  const record = args as Record<string, unknown>;
  if (tool === 'edit_file') return change(record);
  if (tool === 'write_file') return change(record, true);
  if (tool === 'apply_patch' && Array.isArray(record.edits)) {
    return record.edits.flatMap((edit) =>
      typeof edit === 'object' && edit !== null ? change(edit as Record<string, unknown>) : [],
    );
  }
  return [];
}

/** At most this many lines of each side are shown (a whole-file write can be long). */
const MAX_LINES = 200;

export function EditDiff({ changes }: { changes: Change[] }) {
  const { t } = useI18n();
  return (
    <>
      {changes.map((c, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: one call's edits never move
        <figure key={index} className="edit-diff" data-testid="edit-diff">
          <figcaption>
            <code>{c.path}</code>{' '}
            <span className="diff-count">{t('diff.count', { added: c.added.length, removed: c.removed.length })}</span>
          </figcaption>
          <pre>
            {c.removed.slice(0, MAX_LINES).map((line, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: lines of one fixed text
              <del key={`r${i}`} className="diff-line">
                {`- ${line}\n`}
              </del>
            ))}
            {c.added.slice(0, MAX_LINES).map((line, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: lines of one fixed text
              <ins key={`a${i}`} className="diff-line">
                {`+ ${line}\n`}
              </ins>
            ))}
          </pre>
          {(c.removed.length > MAX_LINES || c.added.length > MAX_LINES) && (
            <p className="diff-more">{t('diff.more', { count: MAX_LINES })}</p>
          )}
        </figure>
      ))}
    </>
  );
}
