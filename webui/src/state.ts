/** What a chat shows, built from history and then from server frames as they arrive. */
import type { MediaUrl, ServerFrame, ThreadMessage, ToolEventPayload } from '../../src/channels/websocket/frames.js';

export type Block =
  | { type: 'reasoning'; id: string; text: string; done: boolean }
  /** `plain`: preformatted text (a command's output), shown as written rather than as Markdown. */
  | { type: 'text'; id: string; text: string; done: boolean; plain?: boolean }
  | {
      type: 'tool';
      id: string;
      name: string;
      args: string;
      result?: string;
      isError?: boolean;
      done: boolean;
    }
  /**
   * `hint`: what to do about an error (`Check providers.openai.apiKey …`); `kind`: the error's class (`auth`,
   * `rate_limit`, `network`, … as the gateway names it), which picks the note's title and its settings link.
   */
  | { type: 'note'; id: string; text: string; tone: 'hint' | 'error'; hint?: string; kind?: string };

export type Item =
  | { kind: 'user'; id: string; text: string; media: string[] }
  | { kind: 'assistant'; id: string; blocks: Block[]; media: MediaUrl[]; done: boolean };

export interface ChatState {
  items: Item[];
  /** A turn is running (the stop button shows). */
  busy: boolean;
}

export const emptyChat: ChatState = { items: [], busy: false };

let counter = 0;
const nextId = (prefix: string) => `${prefix}-${++counter}`;

/**
 * A chat from nanobot's webui-thread rows: user rows; assistant rows (reasoning, answer) and tool trace rows
 * (`toolEvents`, one card per call) folded into one assistant item per user turn, as the chat shows them live.
 */
export function fromThread(messages: readonly ThreadMessage[]): ChatState {
  const items: Item[] = [];
  let turn: Extract<Item, { kind: 'assistant' }> | undefined;
  const current = () => {
    if (!turn) {
      turn = { kind: 'assistant', id: nextId('a'), blocks: [], media: [], done: true };
      items.push(turn);
    }
    return turn;
  };
  for (const message of messages) {
    if (message.role === 'user') {
      const media = (message.media ?? []).map((m) => m.name ?? 'file');
      items.push({ kind: 'user', id: message.id, text: message.content, media });
      turn = undefined;
      continue;
    }
    const { blocks } = current();
    if (message.kind === 'trace') {
      if (!message.toolEvents?.length) {
        if (message.content) blocks.push({ type: 'note', id: message.id, text: message.content, tone: 'hint' });
        continue;
      }
      for (const event of message.toolEvents) {
        const failed = event.phase === 'error';
        const output = failed ? event.error : event.result;
        blocks.push({
          type: 'tool',
          id: event.call_id || nextId('tool'),
          name: event.name,
          args: typeof event.arguments === 'string' ? event.arguments : JSON.stringify(event.arguments ?? {}),
          ...(event.phase !== 'start'
            ? { result: typeof output === 'string' ? output : JSON.stringify(output ?? '') }
            : {}),
          ...(event.phase !== 'start' ? { isError: failed } : {}),
          done: true,
        });
      }
      continue;
    }
    if (message.reasoning) blocks.push({ type: 'reasoning', id: nextId('r'), text: message.reasoning, done: true });
    if (message.content) blocks.push({ type: 'text', id: message.id, text: message.content, done: true });
    // Files the agent sent, from their signed URLs (a reload shows the picture it showed live).
    for (const file of message.media ?? []) {
      if (!file.url) continue;
      const kind = file.kind === 'image' || file.kind === 'video' ? file.kind : 'file';
      current().media.push({ url: file.url, name: file.name ?? 'file', kind });
    }
  }
  return { items, busy: false };
}

export function addUserMessage(state: ChatState, text: string, media: string[]): ChatState {
  return { items: [...state.items, { kind: 'user', id: nextId('u'), text, media }], busy: true };
}

/** Applies one frame addressed to this chat. */
export function applyFrame(state: ChatState, frame: ServerFrame): ChatState {
  switch (frame.event) {
    case 'delta':
      return updateTurn(state, (blocks) => appendText(blocks, 'text', frame.stream_id, frame.text));
    case 'reasoning_delta':
      return updateTurn(state, (blocks) => appendText(blocks, 'reasoning', frame.stream_id, frame.text));
    case 'reasoning_end':
      return updateTurn(state, (blocks) => finish(blocks, 'reasoning', frame.stream_id));
    case 'stream_end':
      return updateTurn(state, (blocks) => finish(blocks, 'text', frame.stream_id, frame.text));
    case 'message':
      // A tool call's start (`tool_hint`) or end (`progress`), as nanobot's tool events.
      if (frame.tool_events?.length) {
        const events = frame.tool_events;
        return updateTurn(state, (blocks) => events.reduce(applyToolEvent, blocks));
      }
      if (frame.kind) {
        return updateTurn(state, (blocks) => [
          ...blocks,
          { type: 'note', id: nextId('n'), text: frame.text, tone: 'hint' },
        ]);
      }
      // A message outside a running turn (a reminder, a subagent's report) is a finished answer of its own; inside
      // one (the `message` tool) it joins the turn, which goes on until turn_end.
      return updateTurn(
        state,
        (blocks) =>
          frame.text
            ? [
                ...blocks,
                {
                  type: 'text',
                  id: nextId('t'),
                  text: frame.text,
                  done: true,
                  ...(frame.render_as === 'text' ? { plain: true } : {}),
                },
              ]
            : blocks,
        frame.media_urls,
        state.busy,
      );
    case 'turn_end':
      return {
        busy: false,
        items: state.items.map((item) =>
          item.kind === 'assistant' && !item.done
            ? { ...item, done: true, blocks: item.blocks.map((b) => ('done' in b ? { ...b, done: true } : b)) }
            : item,
        ),
      };
    case 'user_message':
      return addUserMessage(state, frame.text, []);
    case 'error': {
      // A failed turn (or a refused request) ends what is running, with what to do about it.
      const note: Block = {
        type: 'note',
        id: nextId('n'),
        text: frame.detail,
        tone: 'error',
        ...(frame.hint ? { hint: frame.hint } : {}),
        ...(frame.kind ? { kind: frame.kind } : {}),
      };
      return updateTurn(state, (blocks) => [...blocks, note], undefined, false);
    }
    default:
      return state;
  }
}

/**
 * The running assistant turn (or a new one), changed by `change`. `busy`: whether a turn runs afterwards (default
 * yes: the frame is part of one); a new item made while not busy is finished at once.
 */
function updateTurn(
  state: ChatState,
  change: (blocks: Block[]) => Block[],
  media?: MediaUrl[],
  busy = true,
): ChatState {
  const last = state.items.at(-1);
  const items = [...state.items];
  let turn: Extract<Item, { kind: 'assistant' }>;
  if (last?.kind === 'assistant' && !last.done) {
    turn = last;
    items.pop();
  } else {
    turn = { kind: 'assistant', id: nextId('a'), blocks: [], media: [], done: !busy };
  }
  items.push({ ...turn, blocks: change(turn.blocks), media: media ? [...turn.media, ...media] : turn.media });
  return { items, busy };
}

/** One phase of one tool call: a start adds its card, an end or error finishes the card with the same `call_id`. */
function applyToolEvent(blocks: Block[], event: ToolEventPayload): Block[] {
  const ended =
    event.phase === 'start'
      ? undefined
      : event.phase === 'error'
        ? { result: event.error ?? '', isError: true, done: true }
        : { result: event.result ?? '', isError: false, done: true };
  const known = blocks.some((b) => b.type === 'tool' && b.id === event.call_id);
  if (!known) {
    const args = JSON.stringify(event.arguments);
    return [...blocks, { type: 'tool', id: event.call_id, name: event.name, args, done: false, ...ended }];
  }
  if (!ended) return blocks;
  return blocks.map((b) => (b.type === 'tool' && b.id === event.call_id ? { ...b, ...ended } : b));
}

function appendText(blocks: Block[], type: 'text' | 'reasoning', id: string, text: string): Block[] {
  const index = blocks.findIndex((b) => b.type === type && b.id === id);
  if (index === -1) return [...blocks, { type, id, text, done: false }];
  return blocks.map((b, i) => (i === index && b.type === type ? { ...b, text: b.text + text } : b));
}

function finish(blocks: Block[], type: 'text' | 'reasoning', id: string, text?: string): Block[] {
  const index = blocks.findIndex((b) => b.type === type && b.id === id);
  if (index === -1) return text ? [...blocks, { type, id, text, done: true }] : blocks;
  return blocks.map((b, i) =>
    i === index && b.type === type ? { ...b, done: true, ...(text !== undefined ? { text } : {}) } : b,
  );
}
