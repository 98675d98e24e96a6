/**
 * English: the reference locale. Every other locale has exactly these keys (`satisfies Messages` and
 * test/webui/i18n.test.ts check it). `{name}` is a placeholder the caller fills in; keep each one in a translation.
 */
const en = {
  'app.unreachable': 'Cannot reach the gateway: {error}',
  'app.tokenRejected': 'That token was not accepted.',
  'app.notConnected': 'Not connected yet.',
  'app.uploadFailed': 'Could not upload {name}: {error}',
  'app.connectionDropped': 'the connection to the gateway dropped',

  'token.intro': 'Open this page with {webui}, or paste the token it prints with {noOpen}.',
  'token.label': 'Token',
  'token.connect': 'Connect',

  'language.label': 'Language',

  'topbar.openChats': 'Open the chat list',
  'topbar.useLight': 'Use the light theme',
  'topbar.useDark': 'Use the dark theme',
  'topbar.status': 'Status',
  'connection.connecting': 'Connecting to the gateway…',
  'connection.open': 'Connected to the gateway',
  'connection.closed': 'Not connected to the gateway',
  'connection.lost':
    'Lost the connection to the nanobot gateway; reconnecting… If it stopped, start it again with {command}.',

  'sidebar.label': 'Chats',
  'sidebar.close': 'Close the chat list',
  'sidebar.newChat': 'New chat',
  'sidebar.empty': 'No chats yet',
  'sidebar.rename': 'Rename',
  'sidebar.renameChat': 'Rename {title}',
  'sidebar.newTitle': 'New title',
  'sidebar.save': 'Save',
  'sidebar.delete': 'Delete',
  'sidebar.deleteChat': 'Delete {title}',
  'sidebar.confirmDelete': 'Delete “{title}”? This cannot be undone.',
  'sidebar.confirmDeleteAutomations': 'This chat has {count} automation(s). Delete them with the chat?',

  'chat.welcome': 'How can I help?',
  'chat.suggestCapabilities': 'What can you do?',
  'chat.suggestNotes': 'Summarise my notes from today',
  'chat.suggestReminder': 'Remind me to stretch every hour',
  'chat.conversation': 'Conversation',
  'chat.working': 'The agent is working',
  'chat.answerComplete': 'Answer complete',
  'chat.reasoning': 'Reasoning',
  'chat.thinking': 'Thinking…',
  'chat.toolRunning': 'running…',
  'chat.toolFailed': 'failed',
  'chat.toolDone': 'done',
  'chat.arguments': 'Arguments',
  'chat.result': 'Result',
  'chat.none': '(none)',
  'chat.empty': '(empty)',
  'chat.copyCode': 'Copy code',
  'chat.copy': 'Copy',
  'chat.copied': 'Copied',

  'composer.attachments': 'Attachments',
  'composer.removeFile': 'Remove {name}',
  'composer.attach': 'Attach files',
  'composer.message': 'Message',
  'composer.placeholder': 'Message nanobot',
  'composer.connecting': 'Connecting…',
  'composer.keys': 'Enter sends, Shift+Enter starts a new line',
  'composer.send': 'Send',
  'composer.stop': 'Stop',
  'composer.stopHint': 'Stop (/stop)',

  'status.title': 'Status',
  'status.close': 'Close status',
  'status.loading': 'Loading…',
  'status.model': 'Model',
  'status.provider': 'Provider',
  'status.context': 'Context',
  'status.contextUsed': 'Context used',
  'status.tokens': '~{used} of {window} tokens ({share})',
  'status.emptyChat': 'This chat is empty.',
  'status.channels': 'Channels',
  'status.channelStarting': 'starting',
  'status.channelRunning': 'running',
  'status.channelReconnecting': 'reconnecting',
  'status.channelStopped': 'stopped',
  'status.channelError': 'error',
  'status.cron': 'Cron jobs',
  'status.noCron': 'None scheduled.',
  'status.paused': '(paused)',
  'status.nextRun': 'next {time}',
} as const;

export type MessageKey = keyof typeof en;
/** A locale: a string for every key, no more. */
export type Messages = Record<MessageKey, string>;

export default en satisfies Messages;
