/**
 * A loopback HTTP proxy for tests that records every request that passed through it. CONNECT tunnels to 127.0.0.1
 * are spliced to the real port (the fake LLM); a CONNECT to any target `sites` names is answered by the proxy itself,
 * playing that site, so "public" addresses can be fetched without leaving the machine. Anything else gets 502.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';

export interface ProxiedRequest {
  /** `CONNECT` for a tunnel, else the forwarded method. */
  method: string;
  /** The CONNECT authority (`203.0.113.7:80`) or the absolute URL of a forwarded request. */
  target: string;
  /** Inside a tunnel the proxy answered: the Host header and path the client sent. */
  host?: string;
  path?: string;
}

export type SiteHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface RecordingProxy {
  url: string;
  requests: ProxiedRequest[];
  close(): Promise<void>;
}

export async function startRecordingProxy(sites: Record<string, SiteHandler> = {}): Promise<RecordingProxy> {
  const requests: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();
  // The sites the proxy plays: one inner server, fed the tunnelled sockets.
  const inner = createServer((req, res) => {
    const record = (req.socket as Socket & { proxied?: ProxiedRequest }).proxied;
    if (record) requests.push({ ...record, host: req.headers.host ?? '', path: req.url ?? '' });
    const site = record ? sites[record.target] : undefined;
    if (site) site(req, res);
    else res.writeHead(502).end();
  });
  const server: Server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', target: req.url ?? '' });
    res.writeHead(502, { 'content-type': 'text/plain' }).end('this test proxy only tunnels');
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    const record: ProxiedRequest = { method: 'CONNECT', target };
    client.on('error', () => {});
    if (sites[target]) {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      Object.assign(client, { proxied: record });
      if (head.length) client.unshift(head);
      inner.emit('connection', client);
      return;
    }
    requests.push(record);
    const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
    if (host !== '127.0.0.1') {
      client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      return;
    }
    const upstream = connect(port, host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      inner.close();
    },
  };
}
