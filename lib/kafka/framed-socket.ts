/**
 * A kafkajs socket factory whose sockets read each Kafka response straight into one buffer of the
 * response's size, and hand kafkajs whole responses.
 *
 * Why: a plain socket gives kafkajs a new 64 KiB buffer per read, and kafkajs (2.2.4,
 * `Connection.processData`) copies them into one buffer once the response is complete: every byte a
 * Fetch returns is allocated twice. Node counts each of those `ArrayBuffer`s as external memory, and
 * V8 runs a full collection for every ~64 MiB of it; a drain of 2 million records allocated ~2 GB and
 * spent a fifth of its time collecting. Node's `onread` option lets the socket read into a buffer we
 * choose, so each read lands in the response's own buffer, at its place. No library frames a
 * socket this way for kafkajs, hence this file.
 *
 * kafkajs still copies a whole response it is handed once more (its leftover from the previous
 * response is an empty chunk it concatenates with); `takeWholeResponses` (cluster.kafkajs.ts)
 * lets the range reader's connections skip that copy.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { ISocketFactory } from 'kafkajs';
import { onSilentConnection, SILENT_CONNECTION_MS, silentConnectionFound } from '../connection-limits';

/** kafkajs's keep-alive on its own sockets (kafkajs/src/network/socketFactory.js). */
const KEEP_ALIVE_DELAY_MS = 60_000;
const SIZE_BYTES = 4;

/** The code of the error a connection is closed with when it stayed silent while a request waited. */
export const SILENT_CODE = 'ESILENT';

/** Marks a socket whose 'data' events each carry exactly one whole response, size prefix included. */
export const WHOLE_RESPONSES = Symbol('kafka-direct.wholeResponses');

/** What `onread` needs: where the next read goes, and what to do with the bytes it read. */
type ResponseFramer = {
  nextBuffer(): Uint8Array;
  /** Returns the response the read completed, if it did. */
  onRead(bytesRead: number): Buffer | undefined;
};

export type ResponseFramerOptions = {
  /**
   * Largest response read into one buffer allocated as soon as its size arrives. A larger size is
   * read in pieces joined once complete, so memory follows what arrives rather than what the size
   * claims: bytes that are not Kafka's read as one can be huge (a TLS alert to a plaintext client,
   * 352 MB; "HTTP", 1.2 GB). Fetch responses are 4 MiB by default. Default 64 MiB.
   */
  wholeMaxBytes?: number;
  /** Size of each piece of a larger response. Default 1 MiB. */
  pieceBytes?: number;
};

/**
 * Reads a stream of size-prefixed responses (int32 size, then that many bytes) into one buffer per
 * response: the size into a 4-byte buffer, then the rest into the response's own buffer. Each read
 * asks for no more than the current response still lacks, so no read crosses two responses.
 */
export function responseFramer(options: ResponseFramerOptions = {}): ResponseFramer {
  const wholeMaxBytes = options.wholeMaxBytes ?? 64 * 1024 * 1024;
  const pieceBytes = options.pieceBytes ?? 1024 * 1024;
  const size = Buffer.alloc(SIZE_BYTES);
  let sizeFilled = 0;
  /** Where reads go: the whole response, or the current piece of a large one. */
  let target: Buffer | undefined;
  let filled = 0;
  /** A large response's size prefix and completed pieces, and how many bytes it still lacks. */
  let pieces: Buffer[] | undefined;
  let missing = 0;

  function start(bytes: number): void {
    if (bytes <= wholeMaxBytes) {
      target = Buffer.allocUnsafe(SIZE_BYTES + bytes);
      size.copy(target, 0);
      filled = SIZE_BYTES;
    } else {
      pieces = [Buffer.from(size)];
      missing = bytes;
      target = Buffer.allocUnsafe(Math.min(missing, pieceBytes));
      filled = 0;
    }
  }

  return {
    nextBuffer: () => (target ? target.subarray(filled) : size.subarray(sizeFilled)),
    onRead(bytesRead) {
      if (!target) {
        sizeFilled += bytesRead;
        if (sizeFilled < SIZE_BYTES) return undefined;
        sizeFilled = 0;
        const bytes = size.readInt32BE(0);
        if (bytes < 0) throw new RangeError(`the broker sent a response of negative size ${bytes}`);
        start(bytes);
      } else {
        filled += bytesRead;
      }
      if (filled < target!.length) return undefined;
      let whole = target!;
      if (pieces) {
        pieces.push(whole);
        missing -= whole.length;
        if (missing > 0) {
          target = Buffer.allocUnsafe(Math.min(missing, pieceBytes));
          filled = 0;
          return undefined;
        }
        whole = Buffer.concat(pieces);
        pieces = undefined;
      }
      target = undefined;
      return whole;
    },
  };
}

/**
 * The socket factory: kafkajs's own sockets (TLS or plain, keep-alive), reading whole responses,
 * each closed when it stays silent while a request waits on it (`silentMs`, default
 * SILENT_CONNECTION_MS). A silent one also closes every idle Kafka connection of the process, and
 * tells the other clients to close theirs (connection-limits.ts: `silentConnectionFound`).
 */
export const wholeResponseSocketFactory: ISocketFactory = (args) => silentClosingSocket(args, SILENT_CONNECTION_MS);

/** `wholeResponseSocketFactory` with another silence limit (tests). */
export function silentClosingSocket(args: Parameters<ISocketFactory>[0], silentMs: number): net.Socket {
  const { socket, silence } = openSocket(args, silentMs, silentConnectionFound);
  open.set(socket, silence);
  socket.once('close', () => open.delete(socket));
  return socket;
}

/** The process's Kafka sockets and their watches. */
const open = new Map<net.Socket, Silence>();

onSilentConnection(() => {
  for (const [socket, watch] of open) if (watch.idle()) socket.destroy(silentError('closed with another connection that went silent'));
});

const silentError = (message: string): Error => Object.assign(new Error(message), { code: SILENT_CODE });

function openSocket(
  { host, port, ssl, onConnect }: Parameters<ISocketFactory>[0],
  silentMs: number,
  onSilent?: () => void,
): { socket: net.Socket; silence: Silence } {
  const framer = responseFramer();
  const onread: net.OnReadOpts = {
    buffer: () => framer.nextBuffer(),
    callback: (bytesRead) => {
      let whole: Buffer | undefined;
      try {
        whole = framer.onRead(bytesRead);
      } catch (e) {
        socket.destroy(e as Error);
        return false;
      }
      silence.heard(whole !== undefined);
      if (whole) socket.emit('data', whole);
      return true;
    },
  };
  // Node's TLS sockets take `onread` too (tls.connect passes it to the TLSSocket); @types/node omits it.
  const tlsOptions: tls.ConnectionOptions & { onread: net.OnReadOpts } = {
    host,
    port,
    ...(net.isIP(host) ? {} : { servername: host }),
    ...ssl,
    onread,
  };
  const socket = ssl ? tls.connect(tlsOptions, onConnect) : net.connect({ host, port, onread }, onConnect);
  socket.setKeepAlive(true, KEEP_ALIVE_DELAY_MS);
  (socket as net.Socket & { [WHOLE_RESPONSES]?: boolean })[WHOLE_RESPONSES] = true;
  const silence = silenceWatch(socket, silentMs, `${host}:${port}`, onSilent);
  return { socket, silence };
}

/** A socket's watch: what it heard, and whether a request waits on it. */
type Silence = { heard(wholeResponse: boolean): void; idle(): boolean };

/**
 * Closes `socket` with an error once `silentMs` pass without a byte while a request waits for its
 * answer. kafkajs writes each request with one `write` and each answer is one whole response, so
 * writes minus responses is what waits. kafkajs only times the request out and keeps the connection,
 * so every retry went down the same dead connection; closed, its requests fail as a connection error
 * (retriable) and the next one connects again. Idle connections are left alone (a socket's own
 * `setTimeout` would also fire between requests, and kafkajs reads its 'timeout' as a failed connect).
 */
function silenceWatch(socket: net.Socket, silentMs: number, where: string, onSilent?: () => void): Silence {
  let waiting = 0;
  let timer: NodeJS.Timeout | undefined;
  const stop = (): void => {
    clearTimeout(timer);
    timer = undefined;
  };
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  socket.write = ((...args: unknown[]) => {
    waiting++;
    // Only what arrives counts as life: a client resending into a dead connection must not keep it open.
    if (!timer) {
      timer = setTimeout(() => {
        socket.destroy(silentError(`no answer from ${where} for ${silentMs} ms with a request waiting: connection closed`));
        onSilent?.();
      }, silentMs);
      timer.unref();
    }
    return write(...args);
  }) as typeof socket.write;
  socket.once('close', stop);
  return {
    heard(wholeResponse) {
      if (wholeResponse) waiting = Math.max(0, waiting - 1);
      if (waiting === 0) stop();
      else timer?.refresh();
    },
    idle: () => waiting === 0,
  };
}
