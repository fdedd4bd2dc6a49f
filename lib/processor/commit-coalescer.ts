/**
 * The commits of a continuous segment, together (docs/architecture.md, "Continuous mode"). Each
 * partition of a segment commits its small batches on its own; sent as they come, 7 busy partitions
 * would cost 7 ledger writes per batch. Here a progress-only commit waits for the next tick of
 * `intervalMs` and goes out with the others of that tick through `Ledger.commitChunks`, which the
 * store packs into one write per group item. A commit that carries sink writes, dead letters or data
 * loss waits for the same tick and is sent on its own (`commitChunk`), beside them.
 *
 * It also keeps idle ranges' leases: a range that has written nothing for a third of its lease gets
 * a heartbeat (a commit that keeps progress where it is) in the next tick. A heartbeat never runs
 * beside another write of its range (both are conditional on what the other changes), so every write
 * of a held range goes through here, one at a time per range.
 *
 * Hand-written: DataLoader-style batching exists (dataloader), but not with per-item conditional
 * outcomes, heartbeats or the one-write-per-range rule, which are most of this file.
 */
import { ValidationError } from '../errors';
import type { Ledger, ProcessorWriteOutcome, StoreClock } from '../ports/ledger';
import type { LeasedRange } from '../ports/ledger-state';
import { rangeIdentity } from '../ranges';
import { heartbeatDue } from './segment-timing';

type ChunkInput = Parameters<Ledger['commitChunk']>[0];
type ProgressCommit = Parameters<Ledger['commitChunks']>[0][number];

/** What the coalescer sent: the segment's figures (benchmarks, the processor's result). */
export type CoalescerStats = { ticks: number; batches: number; commits: number; heartbeats: number; ownCommits: number };

export type CommitCoalescer = {
  /** The ledger the segment's committers write through. */
  readonly ledger: Ledger;
  /** Starts keeping the range's lease while it is idle (its progress as leased). */
  hold(range: LeasedRange, progress: number): void;
  /** Stops keeping it (given back, failed, lost). */
  drop(range: LeasedRange): void;
  /** Sends what is queued and stops ticking. */
  close(): Promise<void>;
  readonly stats: CoalescerStats;
};

type Held = { range: LeasedRange; progress: number; lastWriteAtMs: number; busy?: Promise<unknown> };
type Queued = { input: ProgressCommit; resolve(o: ProcessorWriteOutcome): void; reject(e: unknown): void };

export type CoalescerOptions = {
  intervalMs: number;
  leaseMs: number;
  clock: () => number;
  storeClock: StoreClock;
  /** A heartbeat found the range's lease taken: its partition must stop. */
  onLost(range: LeasedRange): void;
};

/** A coalescer over `inner`, ticking every `intervalMs` until closed. */
export function createCommitCoalescer(inner: Ledger, opts: CoalescerOptions): CommitCoalescer {
  const held = new Map<string, Held>();
  let queue: Queued[] = [];
  let waiting: Array<{ key: string; go(): void }> = [];
  let flushing: Promise<void> | undefined;
  let closed = false;
  const stats: CoalescerStats = { ticks: 0, batches: 0, commits: 0, heartbeats: 0, ownCommits: 0 };

  /** Runs one write of a held range after the one before it (a heartbeat included). */
  const serialize = async <T>(range: LeasedRange, write: () => Promise<T>): Promise<T> => {
    const h = held.get(rangeIdentity(range));
    if (!h) return write();
    while (h.busy) await h.busy.catch(() => undefined);
    const p = write();
    h.busy = p;
    try {
      return await p;
    } finally {
      if (h.busy === p) h.busy = undefined;
      h.lastWriteAtMs = opts.clock();
    }
  };
  const nextTick = (range: LeasedRange) =>
    closed ? Promise.resolve() : new Promise<void>((go) => waiting.push({ key: rangeIdentity(range), go }));
  const applied = (range: LeasedRange, to: number) => {
    const h = held.get(rangeIdentity(range));
    if (h) h.progress = to;
  };

  /** The held ranges this tick owes a heartbeat: nothing queued or in flight, idle for a third of their lease. */
  const dueHeartbeats = (queued: Set<string>): Held[] => {
    const now = opts.clock();
    return [...held.entries()]
      .filter(([k, h]) => !queued.has(k) && !h.busy && heartbeatDue({ lastWriteAtMs: h.lastWriteAtMs, nowMs: now, leaseMs: opts.leaseMs }))
      .map(([, h]) => h);
  };

  /** The tick's commits and the heartbeats of `due` (on the store's clock) in one `commitChunks`. */
  const send = async (batch: Queued[], due: Held[]): Promise<ProcessorWriteOutcome[]> => {
    const nowMs = due.length ? await opts.storeClock() : 0;
    const beats = due.map((h) => ({ range: h.range, expectProgress: h.progress, to: h.progress, nowMs, leaseMs: opts.leaseMs }));
    return inner.commitChunks([...batch.map((q) => q.input), ...beats]);
  };

  /** One tick: the queued commits and the heartbeats due in one `commitChunks`; the others' turn to send. */
  const flush = async (): Promise<void> => {
    const batch = queue;
    queue = [];
    const own = waiting;
    waiting = [];
    for (const w of own) w.go();
    stats.ownCommits += own.length;
    // Ranges with a write of their own this tick get no heartbeat: it renews their lease anyway.
    const due = dueHeartbeats(new Set([...batch.map((q) => rangeIdentity(q.input.range)), ...own.map((w) => w.key)]));
    if (!batch.length && !due.length) return;
    stats.batches += 1;
    stats.commits += batch.length;
    stats.heartbeats += due.length;
    const sent = send(batch, due);
    // Claimed in the step that found them idle: a write of theirs that starts while the store clock is asked waits for the heartbeat.
    for (const h of due) h.busy = sent;
    let outcomes: ProcessorWriteOutcome[];
    try {
      outcomes = await sent;
    } catch (err) {
      // The store clock or the write failed: the tick's commits fail with it (none is left waiting).
      for (const q of batch) q.reject(err);
      return;
    } finally {
      const now = opts.clock();
      for (const h of due) if (h.busy === sent) h.busy = undefined;
      // Every range written this tick, a progress commit's too: no heartbeat until a third of the lease after it.
      for (const h of [...due, ...batch.map((q) => held.get(rangeIdentity(q.input.range)))]) if (h) h.lastWriteAtMs = now;
    }
    batch.forEach((q, i) => {
      if (outcomes[i] === 'applied') applied(q.input.range, q.input.to);
      q.resolve(outcomes[i] as ProcessorWriteOutcome);
    });
    due.forEach((h, i) => {
      // A range dropped meanwhile is no longer this segment's to report.
      if (outcomes[batch.length + i] === 'applied' || held.get(rangeIdentity(h.range)) !== h) return;
      held.delete(rangeIdentity(h.range));
      opts.onLost(h.range);
    });
  };
  const tick = () => {
    stats.ticks += 1;
    if (flushing) return; // the previous tick's write is still out: its queue waits for the next tick
    flushing = flush().finally(() => (flushing = undefined));
  };
  const timer = setInterval(tick, opts.intervalMs);

  const commitChunk = async (input: ChunkInput): Promise<ProcessorWriteOutcome> => {
    const progressOnly = !input.sinkWrites?.length && !input.deadLetters?.length && !input.dataLoss;
    if (progressOnly && !closed) {
      const { range, expectProgress, to, nowMs, leaseMs } = input;
      if (queue.some((q) => rangeIdentity(q.input.range) === rangeIdentity(range))) {
        throw new ValidationError(`commit of ${rangeIdentity(range)} queued twice: a range commits one batch at a time`);
      }
      return new Promise((resolve, reject) => queue.push({ input: { range, expectProgress, to, nowMs, leaseMs }, resolve, reject }));
    }
    await nextTick(input.range);
    const outcome = await serialize(input.range, () => inner.commitChunk(input));
    if (outcome === 'applied') applied(input.range, input.to);
    return outcome;
  };
  const overrides: Partial<Ledger> = {
    commitChunk,
    beginBatch: (input) => serialize(input.range, () => inner.beginBatch(input)),
    failRange: (input) => serialize(input.range, () => inner.failRange(input)),
    releaseRange: (input) => serialize(input.range, () => inner.releaseRange(input)),
    completeRange: (input) => serialize(input.range, () => inner.completeRange(input)),
  };
  // Every other method is the inner ledger's own.
  const ledger = new Proxy(inner, {
    get(target, prop, receiver) {
      if (typeof prop === 'string' && prop in overrides) return overrides[prop as keyof Ledger];
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });

  return {
    ledger,
    stats,
    hold(range, progress) {
      held.set(rangeIdentity(range), { range, progress, lastWriteAtMs: opts.clock() });
    },
    drop(range) {
      held.delete(rangeIdentity(range));
    },
    async close() {
      clearInterval(timer);
      await flushing;
      closed = true;
      held.clear();
      // Nothing may wait for a tick that will not come.
      await flush();
    },
  };
}
