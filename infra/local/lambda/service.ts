/**
 * A local Lambda: the functions of a packaged stack, each run by a pool of execution environments
 * (emulator.ts: AWS's runtime emulator and runtime client, one invocation each at a time, at most
 * the function's reserved concurrency of them), behind Lambda's Invoke API on a loopback port, so an
 * AWS SDK `LambdaClient` pointed at it (AWS_ENDPOINT_URL_LAMBDA) invokes them as on AWS:
 *
 * - `RequestResponse`: 200 with the function's answer, `X-Amz-Function-Error: Unhandled` when it threw
 *   or timed out; 429 when the reserved concurrency is used up, as Lambda throttles.
 * - `Event`: 202 at once; the event is queued, run when an environment is free, and retried after a
 *   failure or timeout up to the function's MaximumRetryAttempts (Lambda's default 2). Lambda waits
 *   about one and then two minutes before its retries; here the delays are `eventRetryDelaysMs`.
 * - Payloads over Lambda's limits (6 MB synchronous, 1 MB asynchronous) are refused with 413.
 *
 * Schedules (EventBridge rules) invoke their target with their input at their rate, as `Event`s.
 * SQS event source mappings invoke theirs with the queue's messages (queue-poller.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { LOOPBACK } from '../process';
import { startQueuePollers, type QueueMapping } from './queue-poller';
import { startEmulator, type Emulator, type FunctionSpec, type InvokeResult, type RuntimeTools } from './emulator';

const SYNC_PAYLOAD_LIMIT_BYTES = 6 * 1024 * 1024;
const EVENT_PAYLOAD_LIMIT_BYTES = 1024 * 1024;
/** Environments per function without reserved concurrency: each is a Node process (tens of MB). */
export const DEFAULT_MAX_ENVIRONMENTS = 4;

export type InvocationType = 'RequestResponse' | 'Event';

/** One invocation attempt, as the runtime reported it. */
export type InvocationRecord = {
  function: string;
  requestId: string;
  type: InvocationType;
  /** 0 for the first attempt of an event, then its retries. */
  attempt: number;
  outcome: InvokeResult['outcome'];
  /** Set on a cold start (the environment's init, from its INIT REPORT line). */
  initMs?: number;
  durationMs?: number;
  /** The environment's runtime's peak resident set after this invocation (MB), where the machine tells. */
  peakRssMb?: number;
  environment: number;
  startedAtMs: number;
  /** What it was invoked with, and what it answered (an error's document; the first 64 KB). */
  payload: Buffer;
  answer: string;
};

export type Schedule = { target: string; rateMs: number; input: string };

export type LocalLambdaOptions = {
  functions: FunctionSpec[];
  tools: RuntimeTools;
  /** Working directory: the environments' `/tmp`s. */
  dir: string;
  schedules?: Schedule[];
  /** SQS event source mappings, and the emulator serving their queues. */
  queues?: { mappings: QueueMapping[]; endpoint: string; region: string };
  /** Delays before an event's retries (default 1 s, then 2 s: Lambda's one and two minutes, scaled down). */
  eventRetryDelaysMs?: number[];
  maxEnvironments?: number;
  /**
   * The Invoke endpoint the functions are given (AWS_ENDPOINT_URL_LAMBDA), when it is not this
   * service's own: a proxy in front of it, for faults between the functions and Lambda.
   */
  functionsLambdaEndpoint?: string;
  /** Each line the functions and emulators print, with its function's name. */
  onLine?: (fn: string, line: string) => void;
  onInvocation?: (r: InvocationRecord) => void;
};

export type LocalLambda = {
  /** The Invoke API's endpoint (for AWS_ENDPOINT_URL_LAMBDA). */
  endpoint: string;
  invoke(fn: string, payload: unknown, type?: InvocationType): Promise<{ status: number; functionError?: string; body: string }>;
  /** Every invocation attempt so far. */
  readonly records: InvocationRecord[];
  /** Resolves once no event of the function (of any function, without one) is queued, waiting for a retry, or running. */
  idle(fn?: string): Promise<void>;
  /** Stops every idle environment, as Lambda recycles them: the next invocations start cold. */
  recycle(): void;
  /** The environments started and not stopped, busy or idle, with their process groups (to freeze them: `Emulator.pid`). */
  environments(): Array<{ function: string; id: number; pid: number }>;
  stop(): Promise<void>;
};

type Pool = { spec: FunctionSpec; idle: Emulator[]; size: number; cap: number; waiting: Array<(e: Emulator) => void> };

/** Starts the Invoke API and the schedules; environments start on demand (cold starts). */
export async function startLocalLambda(o: LocalLambdaOptions): Promise<LocalLambda> {
  const pools = new Map(o.functions.map((spec) => [spec.name, newPool(spec, o.maxEnvironments ?? DEFAULT_MAX_ENVIRONMENTS)]));
  const records: InvocationRecord[] = [];
  /** Every environment started and not recycled, and its function. */
  const all = new Map<Emulator, string>();
  let nextId = 1;
  // Events queued, waiting for a retry or running, by function; and who waits for none.
  const pending = new Map<string, number>();
  const isIdle = (fn?: string) => (fn ? !pending.get(fn) : [...pending.values()].every((n) => n === 0));
  let idleWaiters: Array<{ fn?: string; resolve(): void }> = [];
  const settle = (fn: string) => {
    pending.set(fn, (pending.get(fn) ?? 1) - 1);
    const ready = idleWaiters.filter((w) => isIdle(w.fn));
    idleWaiters = idleWaiters.filter((w) => !isIdle(w.fn));
    ready.forEach((w) => w.resolve());
  };

  const run = async (pool: Pool, payload: Buffer, type: InvocationType, requestId: string, attempt: number): Promise<InvokeResult> => {
    const env = await acquire(pool, async () => {
      const e = await startEmulator(pool.spec, o.tools, { id: nextId++, dir: o.dir, onLine: (l) => o.onLine?.(pool.spec.name, l) });
      all.set(e, pool.spec.name);
      return e;
    });
    const startedAtMs = Date.now();
    try {
      const res = await env.invoke(payload);
      const record: InvocationRecord = {
        function: pool.spec.name,
        requestId,
        type,
        attempt,
        outcome: res.outcome,
        environment: env.id,
        startedAtMs,
        payload,
        answer: res.body.subarray(0, 64 * 1024).toString('utf8'),
      };
      if (res.initMs !== undefined) record.initMs = res.initMs;
      if (res.durationMs !== undefined) record.durationMs = res.durationMs;
      if (res.peakRssMb !== undefined) record.peakRssMb = res.peakRssMb;
      records.push(record);
      o.onInvocation?.(record);
      return res;
    } finally {
      release(pool, env);
    }
  };

  const enqueueEvent = (pool: Pool, payload: Buffer): void => {
    pending.set(pool.spec.name, (pending.get(pool.spec.name) ?? 0) + 1);
    const requestId = randomUUID();
    const delays = o.eventRetryDelaysMs ?? [1000, 2000];
    void (async () => {
      try {
        for (let attempt = 0; attempt <= pool.spec.maxEventRetries; attempt++) {
          if (attempt > 0) await new Promise((r) => setTimeout(r, delays[Math.min(attempt - 1, delays.length - 1)]));
          const res = await run(pool, payload, 'Event', requestId, attempt).catch(() => undefined);
          if (res?.outcome === 'ok') return;
        }
      } finally {
        settle(pool.spec.name);
      }
    })();
  };

  const server = createServer((req, res) => void handle(req, res, { pools, run, enqueueEvent }));
  await new Promise<void>((r) => server.listen(0, LOOPBACK, r));
  const address = server.address();
  const endpoint = `http://${LOOPBACK}:${typeof address === 'object' && address ? address.port : 0}`;
  // Functions invoke functions through this service, as the SDK does through Lambda's endpoint.
  const lambdaEndpoint = o.functionsLambdaEndpoint ?? endpoint;
  for (const pool of pools.values()) pool.spec = { ...pool.spec, env: { AWS_ENDPOINT_URL_LAMBDA: lambdaEndpoint, ...pool.spec.env } };
  const timers = (o.schedules ?? []).map((s) => scheduleTimer(s, pools, enqueueEvent));
  const pollers = o.queues?.mappings.length
    ? startQueuePollers({
        ...o.queues,
        invoke: async (target, payload) => {
          const pool = pools.get(target);
          if (!pool) throw new Error(`the event source mapping's function ${target} is not a function of the stack`);
          return (await run(pool, payload, 'RequestResponse', randomUUID(), 0)).outcome === 'ok';
        },
      })
    : undefined;

  return {
    endpoint,
    records,
    invoke: (fn, payload, type = 'RequestResponse') => invokeOver(endpoint, fn, payload, type),
    idle: (fn) => (isIdle(fn) ? Promise.resolve() : new Promise((resolve) => idleWaiters.push({ ...(fn && { fn }), resolve }))),
    recycle() {
      for (const pool of pools.values()) {
        const idle = pool.idle.splice(0);
        idle.forEach((e) => {
          e.stop();
          all.delete(e);
        });
        pool.size -= idle.length;
      }
    },
    environments: () => [...all].map(([e, fn]) => ({ function: fn, id: e.id, pid: e.pid })),
    async stop() {
      timers.forEach((t) => clearInterval(t));
      await pollers?.stop();
      await closeServer(server);
      all.forEach((_, e) => e.stop());
    },
  };
}

function newPool(spec: FunctionSpec, maxEnvironments: number): Pool {
  return { spec, idle: [], size: 0, cap: spec.reservedConcurrency ?? maxEnvironments, waiting: [] };
}

/** A free environment of the pool: an idle one, a new one while under the cap, else the next released. */
async function acquire(pool: Pool, start: () => Promise<Emulator>): Promise<Emulator> {
  const idle = pool.idle.pop();
  if (idle) return idle;
  if (pool.size < pool.cap) {
    pool.size++;
    try {
      return await start();
    } catch (err) {
      pool.size--;
      throw err;
    }
  }
  return new Promise((r) => pool.waiting.push(r));
}

function release(pool: Pool, env: Emulator): void {
  const next = pool.waiting.shift();
  if (next) next(env);
  else pool.idle.push(env);
}

/** Whether a synchronous invocation would exceed the reserved concurrency (Lambda throttles it: 429). */
function throttled(pool: Pool): boolean {
  return pool.spec.reservedConcurrency !== undefined && pool.idle.length === 0 && pool.size >= pool.cap;
}

type Handlers = {
  pools: Map<string, Pool>;
  run(pool: Pool, payload: Buffer, type: InvocationType, requestId: string, attempt: number): Promise<InvokeResult>;
  enqueueEvent(pool: Pool, payload: Buffer): void;
};

const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

/** Lambda's Invoke API: the function by name or ARN, its invocation type from X-Amz-Invocation-Type. */
async function handle(req: IncomingMessage, res: ServerResponse, h: Handlers): Promise<void> {
  const m = INVOKE_PATH.exec((req.url ?? '').split('?')[0] ?? '');
  if (req.method !== 'POST' || !m)
    return error(res, 404, 'UnknownOperationException', `the local Lambda serves Invoke only, not ${req.method} ${req.url}`);
  const name = functionName(decodeURIComponent(m[1]!));
  const pool = h.pools.get(name);
  if (!pool) return error(res, 404, 'ResourceNotFoundException', `Function not found: ${name}`);
  const payload = await body(req);
  const type = String(req.headers['x-amz-invocation-type'] ?? 'RequestResponse');
  if (type === 'DryRun') return void res.writeHead(204).end();
  if (type === 'Event') {
    if (payload.length > EVENT_PAYLOAD_LIMIT_BYTES) return tooLarge(res, payload, EVENT_PAYLOAD_LIMIT_BYTES, 'asynchronous');
    h.enqueueEvent(pool, payload);
    return void res.writeHead(202, { 'x-amzn-requestid': randomUUID() }).end();
  }
  if (payload.length > SYNC_PAYLOAD_LIMIT_BYTES) return tooLarge(res, payload, SYNC_PAYLOAD_LIMIT_BYTES, 'synchronous');
  if (throttled(pool))
    return error(res, 429, 'TooManyRequestsException', `Rate Exceeded: ${name} is at its reserved concurrency of ${pool.cap}`);
  try {
    const out = await h.run(pool, payload, 'RequestResponse', randomUUID(), 0);
    const body =
      out.outcome === 'timeout'
        ? Buffer.from(JSON.stringify({ errorMessage: out.body.toString('utf8').trim(), errorType: 'Sandbox.Timedout' }))
        : out.body;
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-amz-executed-version': '$LATEST' };
    if (out.outcome !== 'ok') headers['x-amz-function-error'] = 'Unhandled';
    res.writeHead(200, headers).end(body);
  } catch (err) {
    error(res, 502, 'ServiceException', `the local Lambda could not run ${name}: ${(err as Error).message}`);
  }
}

/** A function's name from a name, a partial ARN or an ARN (a qualifier other than $LATEST is not served). */
function functionName(id: string): string {
  const parts = id.split(':');
  const at = parts.indexOf('function');
  return at >= 0 ? (parts[at + 1] ?? id) : id;
}

function tooLarge(res: ServerResponse, payload: Buffer, limitBytes: number, kind: 'synchronous' | 'asynchronous'): void {
  error(res, 413, 'RequestEntityTooLargeException', `${payload.length} bytes exceed the ${kind} payload limit of ${limitBytes}`);
}

function error(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type }).end(JSON.stringify({ Type: 'User', message }));
}

function body(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function scheduleTimer(s: Schedule, pools: Map<string, Pool>, enqueue: Handlers['enqueueEvent']): NodeJS.Timeout {
  const pool = pools.get(s.target);
  if (!pool) throw new Error(`the schedule's target ${s.target} is not a function of the stack`);
  // A new schedule's first run is due at once, then one per period.
  enqueue(pool, Buffer.from(s.input));
  const t = setInterval(() => enqueue(pool, Buffer.from(s.input)), s.rateMs);
  t.unref();
  return t;
}

async function invokeOver(endpoint: string, fn: string, payload: unknown, type: InvocationType) {
  const res = await fetch(`${endpoint}/2015-03-31/functions/${encodeURIComponent(fn)}/invocations`, {
    method: 'POST',
    headers: { 'x-amz-invocation-type': type },
    body: JSON.stringify(payload),
  });
  const functionError = res.headers.get('x-amz-function-error') ?? undefined;
  return { status: res.status, ...(functionError && { functionError }), body: await res.text() };
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((r) => server.close(() => r()));
}
