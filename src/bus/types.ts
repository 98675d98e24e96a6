/** Messages between surfaces (channels, CLI, API) and the agent. Channels only ever publish and consume these. */

export interface InboundMessage {
  channel: string;
  senderId: string;
  chatId: string;
  content: string;
  /** Local file paths of attachments (images, documents, voice). */
  media?: string[];
  /** Overrides the default `channel:chat_id` session key. */
  sessionKey?: string;
  metadata?: Record<string, unknown>;
  timestamp?: string;
}

export interface OutboundMessage {
  channel: string;
  chatId: string;
  content: string;
  /** Local file paths to attach. */
  media?: string[];
  /** Quick-reply buttons as rows of labels, for channels that support them. */
  buttons?: string[][];
  replyTo?: string;
  metadata?: Record<string, unknown>;
}
