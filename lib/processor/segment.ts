/**
 * A continuous segment (docs/architecture.md, "Continuous mode"): one resident invocation holding
 * the open ranges of up to `continuous.partitionsPerSegment` partitions of one ledger group item.
 * It takes their leases (waiting for its predecessor's hand-over if it was invoked by one), reads
 * every partition side by side as records arrive, commits through the commit coalescer (one write
 * per group item per `commitIntervalMs`, heartbeats for idle partitions), invokes its successor
 * `handoverLeadMs` before its end, and at the end flushes and gives the ranges back as handed over.
 */
import { randomBytes } from 'node:crypto';
import type { StreamConfig } from '../config/schema';
import type { LeaseOutcome, StoreClock } from '../ports/ledger';
import type { LeasedRange } from '../ports/ledger-state';
import type { RangeReader } from '../ports/range-reader';
import { ratePartitions } from '../offsets/segment-rate';
import { rangeIdentity, type RangePayload, type RangesPayload } from '../ranges';
import { createCommitCoalescer, type CommitCoalescer, type Tracked } from './commit-coalescer';
import { emptyResult, leaseRanges, runLeased, type Invocation, type ProcessorDeps, type ProcessResult, type Run } from './process-range';
import { awaitHandover, HANDOVER_POLL_MS, segmentTiming } from './segment-timing';

/** What a continuous segment adds to the run of each of its ranges (process-range.ts asks it). */
export type SegmentHooks = {
  /** Whether the successor was invoked: the ranges are then given back as handed over. */
  handedOver(): boolean;
  /** The range is leased: keep its lease while it is idle. */
  hold(range: LeasedRange, progress: number, tracked?: Tracked): void;
  /** The range is done with (given back, failed, lost). */
  drop(range: LeasedRange): void;
  /** Resolves once what the range's committer has handled is committed by the segment's ticks. */
  settle(range: LeasedRange): Promise<'applied' | 'lease-lost'>;
};

type SegmentInput = { stream: StreamConfig; ranges: RangePayload[]; deadlineAtMs: number; signal?: AbortSignal };

/** Runs one segment to its end (or until its invocation is aborted); results per range, in payload order. */
export async function runSegment(deps: ProcessorDeps, input: SegmentInput): Promise<ProcessResult[]> {
  const c = input.stream.continuous!;
  const clock = deps.clock ?? Date.now;
  const storeClock: StoreClock = deps.storeClock ?? (async () => clock());
  const leaseToken = deps.leaseToken ?? randomBytes(9).toString('base64url');
  const timing = segmentTiming({
    nowMs: clock(),
    deadlineAtMs: input.deadlineAtMs,
    segmentMs: c.segmentMs,
    handoverLeadMs: c.handoverLeadMs,
  });
  const end = new AbortController();
  // Also when the invocation's signal aborted before it began (a successor sent as the runtime stops).
  const ended = input.signal ? AbortSignal.any([input.signal, end.signal]) : end.signal;
  const stops = new Map<string, AbortController>();
  const coalescer = createCommitCoalescer(deps.ledger, {
    intervalMs: c.commitIntervalMs,
    leaseMs: c.leaseMs,
    clock,
    storeClock,
    onLost: (range) => stops.get(rangeIdentity(range))?.abort(),
  });
  const readers: Array<Promise<RangeReader>> = [];
  let handedOver = false;
  const inv: Invocation = {
    // A fold batch is written as soon as the one before it is (write-behind): never held back for a larger one.
    deps: { ...deps, ledger: coalescer.ledger, fold: { ...deps.fold, maxRecords: 1, writeBehind: true }, leaseToken },
    stream: input.stream,
    // The invocation's own deadline: the segment ends on `end`. Against the segment's end, a busy partition's read
    // loop (which stops a second or two slowest chunks early) would give its range back before the hand-over.
    deadlineAtMs: input.deadlineAtMs,
    clock,
    storeClock,
    leaseToken,
    t0: clock(),
    signal: ended,
    segment: {
      handedOver: () => handedOver,
      hold: (r, p, t) => coalescer.hold(r, p, t),
      drop: (r) => coalescer.drop(r),
      settle: (r) => coalescer.settle(r),
    },
  };
  const runs = input.ranges.map((range) => runOf(inv, range, stops, readers));
  const timers: NodeJS.Timeout[] = [];
  try {
    const leases = await takeLeases(inv, input.ranges, timing.endAtMs);
    const taken = input.ranges.filter((_, i) => leases[i]?.kind === 'taken');
    timers.push(setTimeout(() => end.abort(), Math.max(0, timing.endAtMs - clock())));
    timers.push(
      setTimeout(
        () => void handOver(deps, taken, leaseToken, timing.endAtMs).then((ok) => (handedOver = ok && !input.signal?.aborted)),
        Math.max(0, timing.handoverAtMs - clock()),
      ),
    );
    return await runLeased(inv, runs, leases, { single: false, concurrent: true });
  } finally {
    for (const t of timers) clearTimeout(t);
    await closeAll(coalescer, readers);
  }
}

/**
 * One range's run: its own stop (a heartbeat that finds the lease lost stops only its partition)
 * and, with `createReader`, its own reader, closed with the segment.
 */
function runOf(inv: Invocation, range: RangePayload, stops: Map<string, AbortController>, readers: Array<Promise<RangeReader>>): Run {
  const stop = new AbortController();
  stops.set(rangeIdentity(range), stop);
  const { createReader } = inv.deps;
  let reader: Promise<RangeReader> | undefined;
  const readerFor = createReader
    ? (s: StreamConfig) => {
        if (!reader) readers.push((reader = createReader(s)));
        return reader;
      }
    : inv.deps.readerFor;
  const signal = inv.signal ? AbortSignal.any([inv.signal, stop.signal]) : stop.signal;
  return { ...inv, deps: { ...inv.deps, readerFor }, signal, range, result: emptyResult(range) };
}

/**
 * The leases of the segment's ranges. A range its predecessor still holds (this invocation names it
 * in `handover`) is asked again every HANDOVER_POLL_MS from just before the predecessor's end, until
 * it is released or its lease runs out (then it is taken as expired), or this segment's own end.
 */
async function takeLeases(inv: Invocation, ranges: RangePayload[], endAtMs: number): Promise<LeaseOutcome[]> {
  const ask = (rs: RangePayload[]) => leaseRanges(inv, rs);
  const predecessorEndsAtMs = Math.min(...ranges.map((r) => r.handover?.atMs ?? 0));
  const sleep = inv.deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  // Invoked ahead of the hand-over: nothing to take before the predecessor's end.
  if (predecessorEndsAtMs - HANDOVER_POLL_MS > inv.clock())
    await sleep(Math.min(predecessorEndsAtMs - HANDOVER_POLL_MS, endAtMs) - inv.clock());
  const outcomes = await ask(ranges);
  for (;;) {
    const nowMs = await inv.storeClock();
    const waiting = ranges
      .map((r, i) => ({ r, i, o: outcomes[i] as LeaseOutcome }))
      .filter(({ r, o }) => o.kind === 'held' && awaitHandover({ ...holder(o), handoverFrom: r.handover?.from, nowMs }));
    if (!waiting.length || inv.clock() >= endAtMs || inv.signal?.aborted) return outcomes;
    await sleep(HANDOVER_POLL_MS);
    const again = await ask(waiting.map((w) => w.r));
    waiting.forEach((w, j) => (outcomes[w.i] = again[j] as LeaseOutcome));
  }
}

const holder = (o: LeaseOutcome) =>
  'range' in o
    ? { holderToken: o.range.leaseToken, leaseExpiresAtMs: o.range.leaseExpiresAtMs }
    : { holderToken: undefined, leaseExpiresAtMs: 0 };

/**
 * Invokes the successor with the ranges this segment holds, each naming this segment and its end,
 * and the stream's partitions as the ledger has them now: the successor's share of the stream's
 * rate follows partitions added since the planner counted them, one segment later at most.
 */
async function handOver(deps: ProcessorDeps, ranges: RangePayload[], leaseToken: string, endAtMs: number): Promise<boolean> {
  if (!deps.handOver || !ranges.length) return false;
  const stream = (ranges[0] as RangePayload).stream;
  const counted = await activePartitions(deps, stream);
  const payload: RangesPayload = {
    stream,
    ranges: ranges.map(({ stream: _s, handover: _h, ...r }) => ({
      ...r,
      ...(counted !== undefined && { streamPartitions: counted }),
      handover: { from: leaseToken, atMs: endAtMs },
    })),
  };
  return deps.handOver(payload).catch(() => false);
}

/** The partitions sharing the stream's rate as the ledger has them; undefined when it cannot tell (the payload's count then stands). */
async function activePartitions(deps: ProcessorDeps, stream: string): Promise<number | undefined> {
  const partitions = await deps.ledger.readPartitions(stream).catch(() => undefined);
  return partitions ? ratePartitions(partitions) : undefined;
}

async function closeAll(coalescer: CommitCoalescer, readers: Array<Promise<RangeReader>>): Promise<void> {
  await coalescer.close();
  await Promise.allSettled(readers.map(async (r) => (await r).close()));
}
