/**
 * `GET /api/commands`: the slash commands this gateway runs, in nanobot's palette shape (nanobot/command/builtin.py
 * `builtin_command_palette`): `command`, `title`, `description`, `icon`, `arg_hint`, `lifecycle`, `accepts_args`.
 * `lifecycle` tells the WebUI how a command meets the running turn (nanobot's contract): `/stop` cancels it, `/new`
 * closes it, `/goal <task>` starts one, the rest answer beside it.
 */
export interface CommandInfo {
  name: string;
  description: string;
  /** `/history [n]`: the arguments it takes. */
  usage?: string;
}

const LIFECYCLE: Record<string, string> = {
  '/stop': 'stop_active_turn',
  '/new': 'finalize_active_turn',
  '/goal': 'agent_turn_with_args',
};

const ICON: Record<string, string> = {
  '/new': 'square-pen',
  '/stop': 'square',
  '/restart': 'rotate-cw',
  '/status': 'activity',
  '/model': 'brain',
  '/history': 'history',
  '/goal': 'activity',
  '/trigger': 'zap',
  '/dream': 'sparkles',
  '/skill': 'wrench',
  '/help': 'circle-help',
};

export function commandPalette(commands: readonly CommandInfo[]): { commands: Record<string, unknown>[] } {
  return {
    commands: commands.map((c) => {
      const argHint = c.usage?.startsWith(c.name) ? c.usage.slice(c.name.length).trim() : '';
      const description = c.description.trim();
      return {
        command: c.name,
        title: description ? description[0]?.toUpperCase() + description.slice(1) : c.name,
        description,
        icon: ICON[c.name] ?? 'terminal',
        arg_hint: argHint,
        lifecycle: LIFECYCLE[c.name] ?? 'side_channel',
        accepts_args: argHint.length > 0,
      };
    }),
  };
}
