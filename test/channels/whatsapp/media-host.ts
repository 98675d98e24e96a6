/**
 * WhatsApp's upload host (`mmg.whatsapp.net`) on loopback HTTPS, for media the bot sends: Baileys encrypts a file,
 * asks the server for a media connection (`w:m`, answered by the fake with this host), and POSTs the encrypted blob
 * here over https. The certificate is a throwaway self-signed one for 127.0.0.1; `trust()` adds it to the https
 * agent Baileys uploads through (the test's equivalent of a test CA).
 */

import { execFileSync } from 'node:child_process';
import { createDecipheriv, createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getMediaKeys } from 'baileys';

function selfSigned(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'nb-wa-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'],
        ...['-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export class FakeMediaHost {
  /** Uploaded blobs by direct path. */
  readonly uploads = new Map<string, Buffer>();
  private next = 1;

  private constructor(
    private readonly server: https.Server,
    private readonly cert: Buffer,
  ) {}

  static async start(): Promise<FakeMediaHost> {
    const { key, cert } = selfSigned();
    let host: FakeMediaHost | undefined;
    const server = https.createServer({ key, cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (!host || req.method !== 'POST' || !req.url?.startsWith('/mms/') || !req.url.includes('auth=fake-auth')) {
          res.writeHead(403).end('{}');
          return;
        }
        const directPath = `/v/t62.7118-24/upload-${host.next++}.enc`;
        host.uploads.set(directPath, Buffer.concat(chunks));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ url: `https://${host.hostname}${directPath}`, direct_path: directPath }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    host = new FakeMediaHost(server, cert);
    return host;
  }

  get hostname(): string {
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Baileys uploads with node:https' global agent: it trusts this host's certificate until the undo. */
  trust(): () => void {
    const options = https.globalAgent.options;
    const before = options.ca;
    options.ca = this.cert;
    return () => {
      options.ca = before;
    };
  }

  /** What a phone does with a received media message: fetch the blob, check its MAC, decrypt it. */
  async decrypt(
    media: { directPath?: string | null; mediaKey?: Uint8Array | null },
    type: 'image' | 'document' | 'audio' | 'video',
  ): Promise<Buffer> {
    const blob = this.uploads.get(media.directPath ?? '');
    if (!blob || !media.mediaKey) throw new Error(`no upload at ${media.directPath}`);
    const { cipherKey, iv, macKey } = await getMediaKeys(media.mediaKey, type);
    if (!macKey) throw new Error('no MAC key');
    const body = blob.subarray(0, -10);
    const mac = createHmac('sha256', macKey).update(iv).update(body).digest().subarray(0, 10);
    if (!mac.equals(blob.subarray(-10))) throw new Error('media MAC mismatch');
    const decipher = createDecipheriv('aes-256-cbc', cipherKey, iv);
    return Buffer.concat([decipher.update(body), decipher.final()]);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
