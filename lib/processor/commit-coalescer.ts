/**
 * The commits of a continuous segment, together (docs/architecture.md, "Continuous mode"). Each
 * partition of a segment commits its small batches on its own; sent as they come, 7 busy partitions
 * would cost 7 ledger writes per batch. Here a progress-only commit waits for the next tick of
 * `intervalMs` and goes out with the others of that tick through `Ledger.commitChunks`, which the
 * store packs into one write per group item; an at-least-once range's handled position is pulled
 * into the tick the same way (`Tracked`). A commit that carries sink writes, dead letters or data
 * loss is a write of its own anyway (a transaction): it is sent at once (`commitChunk`).
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

/**
 * An at-least-once range whose handled position the coalescer commits at its ticks (pulled, not
 * sent by its committer): a record handled just after a tick is committed at the next one, where a
 * committer waiting for its own commit before sending the next would take two.
 */
export type Tracked = {
  /** Handled up to here: what the next tick commits. */
  position(): number;
  /** The tick's commit up to `to` applied. */
  committed(to: number): void;
};

export type CommitCoalescer = {
  /** The ledger the segment's committers write through. */
  readonly ledger: Ledger;
  /**
   * Starts keeping the range's lease while it is idle (its progress as leased); with `tracked`, commits
   * its handled position at each tick.
   */
  hold(range: LeasedRange, progress: number, tracked?: Tracked): void;
  /**
   * Resolves once the tracked range's position as it is now is committed, and nothing of it is in
   * flight: `lease-lost` when a tick found the lease taken.
   */
  settle(range: LeasedRange): Promise<ProcessorWriteOutcome>;
  /** Stops keeping it (given back, failed, lost). */
  drop(range: LeasedRange): void;
  /** Sends what is queued and stops ticking. */
  close(): Promise<void>;
  readonly stats: CoalescerStats;
};

type Held = { range: LeasedRange; progress: number; lastWriteAtMs: number; busy?: Promise<unknown>; tracked?: Tracked; lost?: boolean };
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
  let flushing: Promise<void> | undefined;
  let closed = false;
  /** Who waits for the end of the next flush (`settle`). */
  const flushed: Array<() => void> = [];
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

  /** Tracked ranges whose handled position moved past their progress, with nothing queued or in flight: this tick commits them. */
  const duePulls = (queued: Set<string>): Array<{ h: Held; to: number }> =>
    [...held.entries()].flatMap(([k, h]) => {
      const to = h.tracked?.position();
      return to !== undefined && to > h.progress && !queued.has(k) && !h.busy ? [{ h, to }] : [];
    });

  /** The tick's commits, pulls and the heartbeats of `due` (the last two on the store's clock) in one `commitChunks`. */
  const send = async (batch: Queued[], pulls: Array<{ h: Held; to: number }>, due: Held[]): Promise<ProcessorWriteOutcome[]> => {
    const nowMs = due.length || pulls.length ? await opts.storeClock() : 0;
    const commit = (h: Held, to: number) => ({ range: h.range, expectProgress: h.progress, to, nowMs, leaseMs: opts.leaseMs });
    return inner.commitChunks([
      ...batch.map((q) => q.input),
      ...pulls.map((p) => commit(p.h, p.to)),
      ...due.map((h) => commit(h, h.progress)),
    ]);
  };
  /** A range whose write this tick found its lease taken: dropped, its waiters told, its partition stopped. */
  const lose = (h: Held) => {
    // A range dropped meanwhile is no longer this segment's to report.
    if (held.get(rangeIdentity(h.range)) !== h) return;
    held.delete(rangeIdentity(h.range));
    h.lost = true;
    opts.onLost(h.range);
  };

  /** One tick: the queued commits, the tracked ranges' positions and the heartbeats due in one `commitChunks`; the others' turn to send. */
  const flush = async (): Promise<void> => {
    try {
      await flushOnce();
    } finally {
      for (const f of flushed.splice(0)) f();
    }
  };
  const flushOnce = async (): Promise<void> => {
    const batch = queue;
    queue = [];
    // Ranges with a commit queued get no pull or heartbeat: it renews their lease anyway.
    const taken = new Set(batch.map((q) => rangeIdentity(q.input.range)));
    const pulls = duePulls(taken);
    for (const p of pulls) taken.add(rangeIdentity(p.h.range));
    const due = dueHeartbeats(taken);
    if (!batch.length && !pulls.length && !due.length) return;
    stats.batches += 1;
    stats.commits += batch.length + pulls.length;
    stats.heartbeats += due.length;
    const sent = send(batch, pulls, due);
    const claimed = [...pulls.map((p) => p.h), ...due];
    // Claimed in the step that found them idle: a write of theirs that starts while the store clock is asked waits for this one.
    for (const h of claimed) h.busy = sent;
    let outcomes: ProcessorWriteOutcome[];
    try {
      outcomes = await sent;
    } catch (err) {
      // The store clock or the write failed: the tick's commits fail with it (none is left waiting).
      for (const q of batch) q.reject(err);
      return;
    } finally {
      const now = opts.clock();
      for (const h of claimed) if (h.busy === sent) h.busy = undefined;
      // Every range written this tick, a progress commit's too: no heartbeat until a third of the lease after it.
      for (const h of [...claimed, ...batch.map((q) => held.get(rangeIdentity(q.input.range)))]) if (h) h.lastWriteAtMs = now;
    }
    batch.forEach((q, i) => {
      if (outcomes[i] === 'applied') applied(q.input.range, q.input.to);
      q.resolve(outcomes[i] as ProcessorWriteOutcome);
    });
    pulls.forEach((p, i) => {
      if (outcomes[batch.length + i] !== 'applied') return lose(p.h);
      p.h.progress = p.to;
      p.h.tracked?.committed(p.to);
    });
    due.forEach((h, i) => {
      if (outcomes[batch.length + pulls.length + i] !== 'applied') lose(h);
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
    // Its own write anyway (sink writes in a transaction): sent at once, not at the next tick.
    stats.ownCommits += 1;
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
    hold(range, progress, tracked) {
      const h = held.get(rangeIdentity(range));
      if (h) h.tracked = tracked;
      else held.set(rangeIdentity(range), { range, progress, lastWriteAtMs: opts.clock(), ...(tracked && { tracked }) });
    },
    async settle(range) {
      const h = held.get(rangeIdentity(range));
      const target = h?.tracked?.position();
      if (!h || target === undefined) return 'applied';
      while (!h.lost && (h.progress < target || h.busy) && !closed) await new Promise<void>((r) => flushed.push(r));
      return h.lost || h.progress < target ? 'lease-lost' : 'applied';
    },
    drop(range) {
      held.delete(rangeIdentity(range));
    },
    async close() {
      clearInterval(timer);
      await flushing;
      closed = true;
      // Nothing may wait for a tick that will not come: the last one sends what is queued and pulled.
      await flush();
      held.clear();
    },
  };
}
