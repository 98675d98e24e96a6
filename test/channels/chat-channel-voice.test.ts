/**
 * Voice in the shared channel framework (any ChatPlatform): incoming audio is transcribed before the turn, marked as a
 * transcript, the audio still attached; replies are spoken as voice notes only where the platform has `sendVoice`
 * and `tts.when` asks. A recording VoiceService stands in for the provider (its HTTP is tested in test/providers).
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MessageBus } from '../../src/bus/message-bus.js';
import type { InboundMessage } from '../../src/bus/types.js';
import { ChatChannel } from '../../src/channels/chat-channel.js';
import { META } from '../../src/channels/metadata.js';
import { PairingStore } from '../../src/channels/pairing.js';
import type { IncomingAttachment, OutgoingFile, ReplyTarget } from '../../src/channels/platform.js';
import { channelSettingsSchema } from '../../src/channels/settings.js';
import type { VoiceService } from '../../src/providers/voice.js';
import { eventually } from './contract.js';
import { MemoryPlatform } from './memory-platform.js';

class VoicePlatform extends MemoryPlatform {
  readonly voiceNotes: { target: ReplyTarget; file: OutgoingFile; existed: boolean }[] = [];
  async sendVoice(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    this.voiceNotes.push({ target, file, existed: existsSync(file.path) });
  }
}

function recordingVoice(dir: string, options: { ready?: boolean; when?: 'voice-in' | 'always' | 'never' } = {}) {
  const transcribed: string[] = [];
  const spoken: string[] = [];
  const voice: VoiceService = {
    transcriptionReady: () => options.ready ?? true,
    transcribeFile: async (path) => {
      transcribed.push(path);
      return path.endsWith('.mp3') ? { ok: false, error: 'groq answered HTTP 500' } : { ok: true, text: 'hello there' };
    },
    speaks: (voiceIn) => options.when === 'always' || (options.when === 'voice-in' && voiceIn),
    speak: async (text) => {
      spoken.push(text);
      const path = join(dir, `reply-${spoken.length}.ogg`);
      writeFileSync(path, 'OggS');
      return { ok: true, path };
    },
    settings: () => {
      throw new Error('not used');
    },
  };
  return { voice, transcribed, spoken };
}

const open: ChatChannel[] = [];
afterEach(async () => {
  for (const channel of open.splice(0)) await channel.stop();
});

async function setup(platform: MemoryPlatform, voice: VoiceService) {
  const dir = mkdtempSync(join(tmpdir(), 'nb-chat-voice-'));
  const bus = new MessageBus();
  const settings = channelSettingsSchema.parse({ allowFrom: ['@owner'] });
  const channel = new ChatChannel({
    name: 'memory',
    platform,
    settings: () => settings,
    pairing: new PairingStore({ dir: join(dir, 'pairing') }),
    mediaDir: join(dir, 'media'),
    voice,
  });
  await channel.start(bus);
  open.push(channel);
  const inbound: InboundMessage[] = [];
  void (async () => {
    for (;;) inbound.push(await bus.consumeInbound());
  })();
  return { channel, inbound };
}

const audio = (name: string): IncomingAttachment => ({
  kind: 'audio',
  name,
  open: async () =>
    (async function* () {
      yield Buffer.from('OggS-audio');
    })(),
});

describe('ChatChannel voice', () => {
  it('transcribes audio before publishing: the transcript marked, the audio attached, failures named', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nb-v-'));
    const { voice, transcribed } = recordingVoice(dir);
    const platform = new MemoryPlatform();
    const { inbound } = await setup(platform, voice);
    await platform.deliver({ text: '', attachments: [audio('voice.ogg')] });
    await platform.deliver({ text: 'and this', attachments: [audio('song.mp3')] });
    await eventually(() => expect(inbound).toHaveLength(2));
    expect(inbound[0]?.content).toBe('[transcription: hello there]');
    expect(inbound[0]?.media).toEqual([transcribed[0]]);
    expect(inbound[0]?.metadata?.[META.voiceIn]).toBe(true);
    expect(inbound[1]?.content).toMatch(/^and this\n\[audio .*song\.mp3 not transcribed: groq answered HTTP 500\]$/);
    expect(inbound[1]?.metadata?.[META.voiceIn]).toBeUndefined();
  });

  it('leaves audio untranscribed (just attached) when transcription is not set up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nb-v-'));
    const { voice, transcribed } = recordingVoice(dir, { ready: false });
    const platform = new MemoryPlatform();
    const { inbound } = await setup(platform, voice);
    await platform.deliver({ text: '', attachments: [audio('voice.ogg')] });
    await eventually(() => expect(inbound).toHaveLength(1));
    expect(transcribed).toEqual([]);
    expect(inbound[0]?.content).toBe('');
    expect(inbound[0]?.media).toHaveLength(1);
  });

  it('speaks replies to voice notes where the platform has sendVoice, and deletes the audio after', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nb-v-'));
    const { voice, spoken } = recordingVoice(dir, { when: 'voice-in' });
    const platform = new VoicePlatform();
    const { channel } = await setup(platform, voice);
    await channel.send({ channel: 'memory', chatId: '1', content: 'Answer.', metadata: { [META.voiceIn]: true } });
    await channel.send({ channel: 'memory', chatId: '1', content: 'Typed.', metadata: {} });
    await channel.send({
      channel: 'memory',
      chatId: '1',
      content: 'thinking',
      metadata: { [META.voiceIn]: true, [META.progress]: true },
    });
    expect(platform.chat('1')).toEqual(['Answer.', 'Typed.', 'thinking']);
    expect(spoken).toEqual(['Answer.']);
    expect(platform.voiceNotes).toHaveLength(1);
    expect(platform.voiceNotes[0]?.existed).toBe(true);
    expect(existsSync(platform.voiceNotes[0]?.file.path ?? '')).toBe(false);

    // A platform without voice notes: text only, nothing synthesised.
    const plain = recordingVoice(dir, { when: 'always' });
    const other = new MemoryPlatform();
    const second = await setup(other, plain.voice);
    await second.channel.send({ channel: 'memory', chatId: '1', content: 'Hi.', metadata: {} });
    expect(other.chat('1')).toEqual(['Hi.']);
    expect(plain.spoken).toEqual([]);
  });
});
