/**
 * The slash commands the gateway runs (`GET /api/commands`, nanobot's palette rows), offered while the message
 * starts with `/`: a listbox tied to the message box (aria-activedescendant), so the arrows move through it, Enter
 * or Tab picks, Escape closes it, and the focus never leaves the text.
 */
import { useI18n } from '../i18n/react.js';

/** One row of nanobot's `/api/commands` (the fields the palette shows). */
export interface SlashCommand {
  command: string;
  description: string;
  arg_hint?: string;
  accepts_args?: boolean;
}

export const PALETTE_ID = 'slash-palette';
export const optionId = (index: number) => `slash-option-${index}`;

/** The commands a draft asks for: while it is `/` and a name (no space yet), those whose name starts with it. */
export function paletteMatches(commands: readonly SlashCommand[], draft: string): SlashCommand[] | null {
  const typed = /^\/(\S*)$/.exec(draft);
  if (!typed) return null;
  const prefix = typed[1]?.toLowerCase() ?? '';
  return commands.filter((c) => c.command.slice(1).toLowerCase().startsWith(prefix));
}

export function SlashPalette({
  matches,
  active,
  onPick,
}: {
  matches: SlashCommand[];
  active: number;
  onPick(command: SlashCommand): void;
}) {
  const { t } = useI18n();
  return (
    <div className="slash-palette">
      {matches.length === 0 ? (
        <p className="slash-none">{t('palette.none')}</p>
      ) : (
        <div id={PALETTE_ID} role="listbox" aria-label={t('palette.label')} className="slash-options">
          {matches.map((command, index) => (
            // The message box keeps the focus and the keys (aria-activedescendant); a click picks too.
            // biome-ignore lint/a11y/useKeyWithClickEvents: the keys are the message box's (see Composer)
            <div
              key={command.command}
              id={optionId(index)}
              role="option"
              aria-selected={index === active}
              // Reached through the message box's aria-activedescendant, never by Tab.
              tabIndex={-1}
              className={index === active ? 'active' : undefined}
              onMouseDown={(event) => event.preventDefault()}
              onClick={() => onPick(command)}
            >
              <code className="slash-name">
                {command.command}
                {command.arg_hint ? ` ${command.arg_hint}` : ''}
              </code>
              <span className="slash-description">{command.description}</span>
            </div>
          ))}
        </div>
      )}
      <p className="slash-keys">{t('palette.keys')}</p>
    </div>
  );
}
