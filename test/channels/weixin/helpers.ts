/** What a WeChat text must be here, and a gateway with the WeChat channel against the fake iLink server. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type FakeIlink, type FakeIlinkOptions, startFakeIlink } from './fake-ilink.js';

/** Within upstream's 1,800-character parts, not blank, code blocks closed, no bare angle bracket outside code. */
export function assertWeixinText(text: string): void {
  if (text.length > 1800) throw new Error(`message is too long (${text.length} > 1800)`);
  if (!text.trim()) throw new Error('message is empty');
  const outside = text.split(/```[\s\S]*?```|`[^`\n]*`/).join('');
  if (outside.includes('```')) throw new Error('a code block is not closed');
  if (/[<>]/.test(outside)) throw new Error('a bare < or > would hide the rest of the message in WeChat');
}

export const OWNER = 'owner@im.wechat';

export interface WeixinGateway {
  gateway: Gateway;
  ilink: FakeIlink;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
  close(): Promise<void>;
}

/** A gateway whose WeChat login was saved (account.json, as the QR login writes it) for the fake's preset token. */
export async function startWeixinGateway(
  settings: Record<string, unknown> = {},
  fakeOptions: FakeIlinkOptions = {},
  account: Record<string, unknown> = {},
  gatewayOptions: Parameters<typeof startChannelGateway>[1] = {},
): Promise<WeixinGateway> {
  const ilink = await startFakeIlink(fakeOptions);
  const llm = await startFakeLLM();
  const files = await writeChannelConfig('weixin', llm, {
    baseUrl: ilink.url,
    cdnBaseUrl: ilink.cdnUrl,
    allowFrom: [OWNER],
    ...settings,
  });
  writeAccount(files.dataDir, { token: ilink.token, base_url: ilink.url, ...account });
  const gateway = await startChannelGateway(files, gatewayOptions);
  return {
    gateway,
    ilink,
    llm,
    dataDir: files.dataDir,
    workspace: files.workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await ilink.close();
      await llm.close();
    },
  };
}

export function writeAccount(dataDir: string, account: Record<string, unknown>): void {
  mkdirSync(join(dataDir, 'weixin'), { recursive: true });
  writeFileSync(join(dataDir, 'weixin', 'account.json'), JSON.stringify(account), { mode: 0o600 });
}

export async function waitState(gateway: Gateway, state: string, timeoutMs = 10_000): Promise<void> {
  await eventually(async () => expect((await healthOf(gateway)).channels.weixin).toBe(state), timeoutMs);
}

export { healthOf };
