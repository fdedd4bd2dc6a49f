/**
 * The whole-response socket: the framer on arbitrary read sizes (property-based), and the socket
 * factory over real loopback TCP against a server that writes responses in odd pieces.
 */
import net from 'node:net';
import fc from 'fast-check';
import {
  responseFramer,
  silentClosingSocket,
  wholeResponseSocketFactory,
  WHOLE_RESPONSES,
  type ResponseFramerOptions,
} from '../../../lib/kafka/framed-socket';
import { silentConnectionFound } from '../../../lib/connection-limits';
import { waitFor } from '../../support/wait-for';

/** A size-prefixed response with `bytes` of payload. */
function frame(payload: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(payload.length, 0);
  return Buffer.concat([size, payload]);
}

/**
 * Feeds `stream` to the framer the way a socket would: each read fills at most the buffer the framer
 * offered and at most what the network delivered (`limits`, cycled).
 */
function feed(stream: Buffer, limits: number[], options: ResponseFramerOptions = {}): { responses: Buffer[]; offered: number[] } {
  const framer = responseFramer(options);
  const responses: Buffer[] = [];
  const offered: number[] = [];
  let at = 0;
  let i = 0;
  while (at < stream.length) {
    const target = framer.nextBuffer();
    offered.push(target.length);
    const n = Math.min(target.length, limits[i++ % limits.length]!, stream.length - at);
    stream.copy(target, 0, at, at + n);
    at += n;
    const whole = framer.onRead(n);
    if (whole) responses.push(whole);
  }
  return { responses, offered };
}

describe('responseFramer', () => {
  it('yields each response whole, size prefix included, however the bytes arrive', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 3000 }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 1, maxLength: 10 }),
        // Small limits, so that responses of both kinds, whole and in pieces, come by.
        fc.record({ wholeMaxBytes: fc.integer({ min: 0, max: 3000 }), pieceBytes: fc.integer({ min: 1, max: 1000 }) }),
        (payloads, limits, options) => {
          const frames = payloads.map((p) => frame(Buffer.from(p)));
          const { responses } = feed(Buffer.concat(frames), limits, options);
          expect(responses.map((r) => r.toString('hex'))).toEqual(frames.map((f) => f.toString('hex')));
        },
      ),
    );
  });

  it('never offers a read that would cross into the next response', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2000 }), { minLength: 1, maxLength: 6 }), (sizes) => {
        const frames = sizes.map((n) => frame(Buffer.alloc(n, 7)));
        const stream = Buffer.concat(frames);
        // The network would deliver everything at once: the framer alone bounds each read.
        const { offered, responses } = feed(stream, [stream.length]);
        expect(responses).toHaveLength(frames.length);
        // One read for each size prefix and one for each non-empty payload.
        expect(offered).toEqual(sizes.flatMap((n) => (n === 0 ? [4] : [4, n])));
      }),
    );
  });

  it('reads a response larger than wholeMaxBytes in pieces, allocating only as bytes arrive', () => {
    // A TLS alert (15 03 03 00 02 ...) read as a Kafka size: 352,518,912 bytes declared, 3 more sent.
    const framer = responseFramer();
    framer.nextBuffer().set([0x15, 0x03, 0x03, 0x00]);
    expect(framer.onRead(4)).toBeUndefined();
    const next = framer.nextBuffer();
    expect(next.length).toBe(1024 * 1024);
    next.set([0x02, 0x02, 0x0a]);
    expect(framer.onRead(3)).toBeUndefined();
    expect(framer.nextBuffer().length).toBe(1024 * 1024 - 3);
  });

  it('rejects a negative size, naming it', () => {
    const framer = responseFramer();
    framer.nextBuffer().set([0xff, 0xff, 0xff, 0xfe]);
    expect(() => framer.onRead(4)).toThrow('the broker sent a response of negative size -2');
  });
});

describe('wholeResponseSocketFactory', () => {
  let server: net.Server;
  let port: number;
  const sockets = new Set<net.Socket>();
  /** What the server writes to each connection: pieces, each written after the one before was flushed. */
  let pieces: Buffer[] = [];

  beforeEach(async () => {
    server = net.createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      void (async () => {
        for (const p of pieces) {
          await new Promise<void>((resolve) => s.write(p, () => resolve()));
          // Let each piece arrive as its own read.
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });

  afterEach(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  function connect(): Promise<{ socket: net.Socket; received: Buffer[]; closed: Promise<Error | undefined> }> {
    return new Promise((resolve) => {
      const received: Buffer[] = [];
      const socket = wholeResponseSocketFactory({
        host: '127.0.0.1',
        port,
        ssl: undefined as never,
        onConnect: () => resolve({ socket, received, closed }),
      });
      const closed = new Promise<Error | undefined>((done) => {
        let error: Error | undefined;
        socket.on('error', (e) => (error = e));
        socket.on('close', () => done(error));
      });
      socket.on('data', (d: Buffer) => received.push(d));
    });
  }

  it('emits one data event per response, whatever pieces the server wrote', async () => {
    const a = frame(Buffer.alloc(200_000, 1));
    const b = frame(Buffer.from('second'));
    const c = frame(Buffer.alloc(0));
    const stream = Buffer.concat([a, b, c]);
    // Cut across the size prefixes and across responses.
    pieces = [stream.subarray(0, 2), stream.subarray(2, 70_000), stream.subarray(70_000, a.length + 3), stream.subarray(a.length + 3)];
    const { socket, received } = await connect();
    await waitFor('three whole responses', () => received.length, { until: (n) => n >= 3, timeoutMs: 5_000, intervalMs: 10 });
    expect(received.map((r) => r.toString('hex'))).toEqual([a, b, c].map((f) => f.toString('hex')));
    expect((socket as net.Socket & { [WHOLE_RESPONSES]?: boolean })[WHOLE_RESPONSES]).toBe(true);
    socket.destroy();
  });

  it('closes the socket with an error naming a negative size', async () => {
    pieces = [Buffer.from([0x80, 0, 0, 0])];
    const { closed, received } = await connect();
    expect((await closed)?.message).toBe('the broker sent a response of negative size -2147483648');
    expect(received).toEqual([]);
  });
});

describe('a connection silent while a request waits', () => {
  const SILENT_MS = 200;
  let server: net.Server;
  let port: number;
  const sockets = new Set<net.Socket>();
  /** Whether the server answers each request (one whole response per write it reads). */
  let answering = true;

  beforeEach(async () => {
    answering = true;
    server = net.createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('data', () => {
        if (answering) s.write(frame(Buffer.from('answer')));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  afterEach(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  function connect(): Promise<{ socket: net.Socket; received: Buffer[]; closed: Promise<Error | undefined>; isClosed(): boolean }> {
    return new Promise((resolve) => {
      const received: Buffer[] = [];
      let isClosed = false;
      const socket = silentClosingSocket(
        {
          host: '127.0.0.1',
          port,
          ssl: undefined as never,
          onConnect: () => resolve({ socket, received, closed, isClosed: () => isClosed }),
        },
        SILENT_MS,
      );
      const closed = new Promise<Error | undefined>((done) => {
        let error: Error | undefined;
        socket.on('error', (e) => (error = e));
        socket.on('close', () => {
          isClosed = true;
          done(error);
        });
      });
      socket.on('data', (d: Buffer) => received.push(d));
    });
  }

  it('is closed with an error naming the broker once nothing answered for the limit', async () => {
    answering = false;
    const { socket, closed } = await connect();
    const t0 = Date.now();
    socket.write(Buffer.from('request'));
    const err = await closed;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(SILENT_MS - 20);
    expect(err?.message).toBe(`no answer from 127.0.0.1:${port} for ${SILENT_MS} ms with a request waiting: connection closed`);
    expect((err as Error & { code?: string }).code).toBe('ESILENT');
  });

  it('stays open while idle, answered requests and all, however long nothing is asked', async () => {
    const { socket, received, isClosed } = await connect();
    socket.write(Buffer.from('one'));
    await waitFor('the answer', () => received.length, { until: (n) => n >= 1, timeoutMs: 2_000, intervalMs: 10 });
    socket.write(Buffer.from('two'));
    await waitFor('the second answer', () => received.length, { until: (n) => n >= 2, timeoutMs: 2_000, intervalMs: 10 });
    // Idle for three limits: nothing waits, so nothing closes it.
    await new Promise((r) => setTimeout(r, SILENT_MS * 3));
    expect(isClosed()).toBe(false);
    socket.destroy();
  });
});

describe('a connection resent into while silent', () => {
  it('is closed after the limit from the first unanswered request, however often the client writes', async () => {
    const server = net.createServer((s) => s.resume());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const socket = await new Promise<net.Socket>((resolve) => {
      const s = silentClosingSocket({ host: '127.0.0.1', port, ssl: undefined as never, onConnect: () => resolve(s) }, 300);
    });
    const closed = new Promise<Error | undefined>((done) => {
      let error: Error | undefined;
      socket.on('error', (e) => (error = e));
      socket.on('close', () => done(error));
    });
    const t0 = Date.now();
    const resend = setInterval(() => socket.writable && socket.write(Buffer.from('again')), 50);
    socket.write(Buffer.from('first'));
    const err = await closed;
    clearInterval(resend);
    server.close();
    expect((err as Error & { code?: string }).code).toBe('ESILENT');
    expect(Date.now() - t0).toBeLessThan(1_000);
  });
});

describe('the idle connections when one goes silent', () => {
  it('are closed with it, by the silent one or by another kind of client saying so, and one busy with a request is left to its own watch', async () => {
    // Connections numbered in the order they open: the server answers the first two, never the others.
    let n = 0;
    const server = net.createServer((s) => {
      const mine = ++n;
      s.on('data', () => {
        if (mine <= 2) s.write(frame(Buffer.from('answer')));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const open = () =>
      new Promise<{ socket: net.Socket; closed: Promise<Error | undefined> }>((resolve) => {
        const socket = silentClosingSocket(
          { host: '127.0.0.1', port, ssl: undefined as never, onConnect: () => resolve({ socket, closed }) },
          300,
        );
        const closed = new Promise<Error | undefined>((done) => {
          let error: Error | undefined;
          socket.on('error', (e: Error) => (error = e));
          socket.on('close', () => done(error));
        });
      });
    const answered = async () => {
      const c = await open();
      c.socket.write(Buffer.from('one'));
      await new Promise((r) => c.socket.once('data', r));
      return c;
    };
    const idle = await answered();
    const idle2 = await answered();
    // Another kind of client (an AWS agent) found a silent connection: the idle Kafka ones close.
    silentConnectionFound();
    expect((await idle.closed)?.message).toBe('closed with another connection that went silent');
    expect(((await idle2.closed) as Error & { code?: string }).code).toBe('ESILENT');
    const idle3 = await open(); // never asked anything: idle
    const busy = await open(); // a request that will go unanswered, sent later
    const dead = await open(); // the one that goes silent first
    dead.socket.write(Buffer.from('request'));
    await new Promise((r) => setTimeout(r, 150));
    busy.socket.write(Buffer.from('request'));
    expect((await dead.closed)?.message).toMatch(/^no answer from 127\.0\.0\.1:\d+ for 300 ms/);
    expect((await idle3.closed)?.message).toBe('closed with another connection that went silent');
    // The busy one was not closed with them: its own watch closes it 300 ms after its request.
    expect(busy.socket.destroyed).toBe(false);
    expect((await busy.closed)?.message).toMatch(/^no answer from/);
    server.close();
  });
});
