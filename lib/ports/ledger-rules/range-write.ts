/**
 * The processor's write rules, once: what each write of a lease holder requires of its range (and
 * partition) and what it changes, as item steps (item-step.ts). The in-memory ledger folds them into
 * its maps; the DynamoDB adapter compiles them into the conditions and updates of its writes. A
 * write whose requirements do not hold changes nothing and is reported `lease-lost`: the caller's
 * view of the range is stale (another holder, another position, another batch).
 */
import { ValidationError } from '../../errors';
import { isOpenRange, OPEN_UNTIL, rangeIdentity } from '../../ranges';
import type { DataLossEntry, DeadLetter, LeasedRange, RangeStats } from '../ledger-state';
import { isIncarnation, partitionRef, rangeRef, type ItemStep, type Requirement, type UpdateStep } from './item-step';
import { pendingDeliveriesOf } from './outbox';

/** The lease holder's requirement: every processor write is conditional on it (I3). */
export function holdsLeaseRequirements(leaseToken: string): Requirement[] {
  return [
    { field: 'status', is: 'leased' },
    { field: 'leaseToken', is: leaseToken },
  ];
}

/**
 * Progress moves forward only, from the position the caller holds (I2) to `to` within the range:
 * `progress = expect`, `expect <= to` and `to <= until`.
 */
function progressMoves(expect: number, to: number): Requirement[] {
  return [
    { field: 'progress', is: expect },
    { field: 'progress', atMost: to },
    { field: 'until', atLeast: to },
  ];
}

/**
 * No folded batch is pending, or the pending one ends at `end`: a write that moves progress past a
 * pending batch must end exactly there (the batch's writes may be half applied).
 */
const pendingEndsAt = (end: number): Requirement => ({ field: 'pendingUntil', is: end, absentIs: end });

/** What a chunk commit carries besides its progress (sink writes are the adapter's, beside these steps). */
export type ChunkCommit = {
  range: LeasedRange;
  expectProgress: number;
  to: number;
  nowMs: number;
  leaseMs: number;
  deadLetters?: DeadLetter[];
  dataLoss?: DataLossEntry;
};

/**
 * A chunk's commit: progress `expect -> to` with the lease renewed, a pending folded batch ended
 * (it must end at `to`), and the chunk's dead letters (each with its pending deliveries) and
 * data-loss entry created, all or none. `to` may equal `expect`: the lease is renewed, nothing moves.
 *
 * An open segment range (continuous mode) is never completed, so its progress is what the partition
 * has committed: the same write moves the partition's committed offset with it, conditional on it
 * standing at the progress replaced (it was the range's start when the range was planned, and only
 * this range's holder moves it since), and records when the holder last committed.
 */
export function commitChunkSteps(c: ChunkCommit): [UpdateStep, ...ItemStep[]] {
  const open = isOpenRange(c.range);
  // A heartbeat (nothing moves, nothing written beside) renews the lease whatever batch is pending: it
  // keeps the lease of a holder whose marked writes take long, and leaves the batch to its commit.
  const heartbeat = c.to === c.expectProgress && !c.deadLetters?.length && !c.dataLoss;
  const progress: UpdateStep = {
    kind: 'update',
    ref: rangeRef(c.range),
    when: [
      ...holdsLeaseRequirements(c.range.leaseToken),
      ...progressMoves(c.expectProgress, c.to),
      ...(heartbeat ? [] : [pendingEndsAt(c.to)]),
      // The stored range must be open too: a holder that thinks so of a bounded range must not move the partition.
      ...(open ? [{ field: 'until', is: OPEN_UNTIL }] : []),
    ],
    change: {
      set: { progress: c.to, leaseExpiresAtMs: c.nowMs + c.leaseMs, ...(open ? { lastCommitAtMs: c.nowMs } : {}) },
      ...(heartbeat ? {} : { remove: ['pendingUntil'] }),
    },
  };
  const committed: ItemStep[] = open
    ? [
        {
          kind: 'update',
          ref: partitionRef(c.range.topic, c.range.partition),
          when: [isIncarnation(c.range.incarnation), { field: 'committed', is: c.expectProgress }],
          change: { set: { committed: c.to } },
        },
      ]
    : [];
  return [
    progress,
    ...committed,
    ...(c.deadLetters ?? []).flatMap((d): ItemStep[] => [
      { kind: 'create-dead-letter', value: d },
      ...pendingDeliveriesOf(d).map((p): ItemStep => ({ kind: 'put-delivery', value: p })),
    ]),
    ...(c.dataLoss ? [{ kind: 'create-loss', value: c.dataLoss } as const] : []),
  ];
}

/** A commit of progress alone (`Ledger.commitChunks`): no sink writes, dead letters or data loss. */
export type ProgressCommit = Pick<ChunkCommit, 'range' | 'expectProgress' | 'to' | 'nowMs' | 'leaseMs'>;

/**
 * The commits of one `commitChunks` call, as progress alone (whatever else an input carries is not
 * part of it). They must be of one stream and of distinct ranges: two commits of one range in one
 * call would race each other for the same progress, and which one applies would depend on how the
 * store packs them (ValidationError, nothing written).
 */
export function progressCommitsOf(inputs: readonly ProgressCommit[]): ProgressCommit[] {
  const seen = new Set<string>();
  for (const { range } of inputs) {
    if (range.stream !== inputs[0]?.range.stream) {
      throw new ValidationError(`commitChunks: ranges of one stream only (${inputs[0]?.range.stream}, ${range.stream})`);
    }
    const id = rangeIdentity(range);
    if (seen.has(id)) throw new ValidationError(`commitChunks: range ${id} of ${range.stream} is committed twice in one call`);
    seen.add(id);
  }
  return inputs.map(({ range, expectProgress, to, nowMs, leaseMs }) => ({ range, expectProgress, to, nowMs, leaseMs }));
}

/**
 * Records the folded batch `[expect, until)` as pending, renewing the lease: the batch must lie
 * inside the range and be the one pending, if any (recording it again is a no-op).
 */
export function beginBatchStep(b: {
  range: LeasedRange;
  expectProgress: number;
  until: number;
  nowMs: number;
  leaseMs: number;
}): UpdateStep {
  return {
    kind: 'update',
    ref: rangeRef(b.range),
    when: [
      ...holdsLeaseRequirements(b.range.leaseToken),
      { field: 'progress', is: b.expectProgress },
      // A batch holds at least one offset.
      { field: 'progress', atMost: b.until - 1 },
      { field: 'until', atLeast: b.until },
      pendingEndsAt(b.until),
    ],
    change: { set: { pendingUntil: b.until, leaseExpiresAtMs: b.nowMs + b.leaseMs } },
  };
}

/** A range's completion: its holder, where its committed progress stands, and what the partition learns. */
export type RangeCompletion = {
  range: LeasedRange;
  /** The range's committed progress: a completion also commits what was handled since, up to `until`. */
  expectProgress: number;
  nowMs: number;
  stats: RangeStats;
  observedRecordsPerSec?: number;
  observedBytesPerRecord?: number;
};

/**
 * Marks the range done at `until` with its statistics (a completion also commits what was handled
 * since `expectProgress`, ending a pending batch there; its partition's `lastRange` is its newest
 * finished range's, see derived.ts), and records the observed rate on its partition (same
 * incarnation). With `advance`, the partition's committed offset moves from the range's start to its
 * end, which requires it to stand at the start (one range in flight per partition).
 */
export function completeRangeSteps(c: RangeCompletion, advance: boolean): ItemStep[] {
  const { range, stats } = c;
  const set: Record<string, unknown> = {
    ...(c.observedRecordsPerSec !== undefined ? { observedRecordsPerSec: c.observedRecordsPerSec } : {}),
    ...(c.observedBytesPerRecord !== undefined ? { observedBytesPerRecord: c.observedBytesPerRecord } : {}),
    ...(advance ? { committed: range.until } : {}),
  };
  return [
    {
      kind: 'update',
      ref: rangeRef(range),
      when: [
        ...holdsLeaseRequirements(range.leaseToken),
        ...progressMoves(c.expectProgress, range.until),
        { field: 'until', is: range.until },
        pendingEndsAt(range.until),
      ],
      change: {
        set: {
          status: 'done',
          progress: range.until,
          finishedAtMs: stats.finishedAtMs,
          records: stats.records,
          processingMs: stats.processingMs,
          schedulingDelayMs: stats.schedulingDelayMs,
        },
        remove: ['leaseExpiresAtMs', 'pendingUntil'],
      },
    },
    // Conditional on the incarnation even with nothing to set: a range of a closed incarnation never completes.
    {
      kind: 'update',
      ref: partitionRef(range.topic, range.partition),
      when: [isIncarnation(range.incarnation), ...(advance ? [{ field: 'committed', is: range.from }] : [])],
      change: { set },
    },
  ];
}

/**
 * Records the holder's failure: `failed` (dispatched again) or `parked` (left for an operator); the
 * lease is dropped. A `failed` attempt that committed progress gives its attempt back (`Ledger.failRange`).
 */
export function failRangeStep(f: {
  range: LeasedRange;
  status: 'failed' | 'parked';
  error: string;
  nowMs: number;
  progressed?: boolean;
}): UpdateStep {
  return {
    kind: 'update',
    ref: rangeRef(f.range),
    when: holdsLeaseRequirements(f.range.leaseToken),
    change: {
      set: { status: f.status, lastError: f.error.slice(0, MAX_ERROR_CHARS), failedAtMs: f.nowMs, leaseExpiresAtMs: 0 },
      ...(f.progressed && f.status === 'failed' ? { add: { attempts: -1 } } : {}),
    },
  };
}

/**
 * Gives the range back before the deadline, keeping its progress: `planned` and not dispatched, so
 * the next planner run sends it at once. A deadline that still made progress is not a failed attempt.
 *
 * A hand-over (`handover`): the holder has already dispatched its successor itself, so the range is
 * recorded as dispatched now (the planner sends it again only if no processor takes it within the
 * lease time, as any dispatched range), and the attempt is always given back: handing over at the
 * end of a time budget is how an open range runs, not a failure, however little it progressed.
 */
export function releaseRangeStep(r: { range: LeasedRange; nowMs: number; progressed: boolean; handover?: boolean }): UpdateStep {
  return {
    kind: 'update',
    ref: rangeRef(r.range),
    when: holdsLeaseRequirements(r.range.leaseToken),
    change: {
      // A hand-over's time is its dispatch's: not written twice, so a group item of 7 open ranges stays under 1 KB (one write unit).
      set: { status: 'planned', leaseExpiresAtMs: 0, ...(r.handover ? { dispatchedAtMs: r.nowMs } : { releasedAtMs: r.nowMs }) },
      ...(r.progressed || r.handover ? { add: { attempts: -1 } } : {}),
      ...(r.handover ? {} : { remove: ['dispatchedAtMs'] }),
    },
  };
}

/** The longest `lastError` a range keeps (the item limit leaves room for it). */
export const MAX_ERROR_CHARS = 4000;
