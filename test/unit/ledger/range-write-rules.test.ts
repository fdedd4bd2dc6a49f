/**
 * The processor's write rules (ports/ledger-rules/range-write.ts): when a lease holder's commit,
 * batch record, completion, failure or release applies to its range, and what it changes, checked
 * over plain state with `meets`/`changed` as both ledgers apply them.
 */
import fc from 'fast-check';
import { changed, meets, type UpdateStep } from '../../../lib/ports/ledger-rules/item-step';
import {
  beginBatchStep,
  commitChunkSteps,
  completeRangeSteps,
  failRangeStep,
  progressCommitsOf,
  releaseRangeStep,
} from '../../../lib/ports/ledger-rules/range-write';
import type { RangeState } from '../../../lib/ports/ledger-state';
import { ValidationError } from '../../../lib/errors';
import { OPEN_UNTIL } from '../../../lib/ranges';
import { partitionState, rangeState } from './states';

const held = { stream: 's', topic: 't', partition: 0, from: 10, until: 110, leaseToken: 'A' };
const leased = (extra: Partial<RangeState> = {}): RangeState =>
  rangeState(10, 110, { status: 'leased', leaseToken: 'A', leaseExpiresAtMs: 5000, attempts: 1, ...extra });

/** The range after `step`, or undefined when its requirements do not hold. */
const apply = (r: RangeState, step: UpdateStep): RangeState | undefined => (meets(r, step.when) ? changed(r, step.change) : undefined);

describe('commitChunkSteps', () => {
  it('moves progress forward only, within the range, from the position held, by the holder', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 10, max: 110 }),
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 0, max: 200 }),
        fc.constantFrom('A', 'B'),
        fc.option(fc.integer({ min: 11, max: 110 }), { nil: undefined }),
        (progress, expectProgress, to, token, pendingUntil) => {
          const r = leased({ progress, ...(pendingUntil !== undefined ? { pendingUntil } : {}) });
          const [step] = commitChunkSteps({ range: { ...held, leaseToken: token }, expectProgress, to, nowMs: 100, leaseMs: 10 });
          const out = apply(r, step);
          const ok =
            token === 'A' &&
            expectProgress === progress &&
            expectProgress <= to &&
            to <= 110 &&
            (pendingUntil === undefined || pendingUntil === to);
          expect(out !== undefined).toBe(ok);
          if (out) {
            expect(out).toMatchObject({ progress: to, leaseExpiresAtMs: 110 });
            expect(out.pendingUntil).toBeUndefined();
          }
        },
      ),
    );
  });

  it('creates the chunk dead letters, one pending delivery per destination, and the data-loss entry with the progress', () => {
    const letter = {
      stream: 's',
      topic: 't',
      partition: 0,
      offset: 12,
      timestampMs: 1,
      keyBase64: null,
      valueBase64: null,
      valueBytes: 0,
      truncated: false,
      headers: [],
      error: 'e',
      attempts: 1,
      rangeFrom: 10,
      createdAtMs: 7,
      kept: 'record' as const,
      deliveries: ['sqs' as const, 's3' as const],
    };
    const loss = { stream: 's', topic: 't', partition: 0, from: 20, until: 30, detectedAtMs: 1, reason: 'r' };
    const steps = commitChunkSteps({
      range: held,
      expectProgress: 10,
      to: 30,
      nowMs: 1,
      leaseMs: 1,
      deadLetters: [letter],
      dataLoss: loss,
    });
    expect(steps.map((s) => s.kind)).toEqual(['update', 'create-dead-letter', 'put-delivery', 'put-delivery', 'create-loss']);
    expect(steps.flatMap((s) => (s.kind === 'put-delivery' ? [s.value.destination] : []))).toEqual(['s3', 'sqs']);
  });
});

describe('commitChunkSteps of an open segment range', () => {
  const open = { ...held, until: OPEN_UNTIL };
  const openLeased = (extra: Partial<RangeState> = {}) => leased({ until: OPEN_UNTIL, ...extra });

  it("moves the partition's committed offset with the progress, from where it stands, in the range's incarnation", () => {
    const [range, partition, ...rest] = commitChunkSteps({ range: open, expectProgress: 40, to: 55, nowMs: 100, leaseMs: 10 }) as [
      UpdateStep,
      UpdateStep,
    ];
    expect(rest).toEqual([]);
    expect(apply(openLeased({ progress: 40 }), range)).toMatchObject({ progress: 55, leaseExpiresAtMs: 110, lastCommitAtMs: 100 });
    expect(partition.ref).toEqual({ item: 'partition', topic: 't', partition: 0 });
    const p = partitionState({ committed: 40, nextFrom: OPEN_UNTIL });
    expect(meets(p, partition.when) && changed(p, partition.change)).toMatchObject({ committed: 55, nextFrom: OPEN_UNTIL });
    expect(meets(partitionState({ committed: 39 }), partition.when)).toBe(false);
    expect(meets(partitionState({ committed: 40, incarnation: 1 }), partition.when)).toBe(false);
    // Stored as a bounded range: the holder's view is stale, the partition is not moved.
    expect(apply(leased({ progress: 40 }), range)).toBeUndefined();
  });

  it('keeps progress where it is on a heartbeat, renewing the lease', () => {
    const [range, partition] = commitChunkSteps({ range: open, expectProgress: 40, to: 40, nowMs: 200, leaseMs: 10 }) as [
      UpdateStep,
      UpdateStep,
    ];
    expect(apply(openLeased({ progress: 40 }), range)).toMatchObject({ progress: 40, leaseExpiresAtMs: 210, lastCommitAtMs: 200 });
    expect(changed(partitionState({ committed: 40 }), partition.change)).toMatchObject({ committed: 40 });
  });

  it('leaves bounded ranges as they were: the range alone, no commit time', () => {
    const steps = commitChunkSteps({ range: held, expectProgress: 40, to: 55, nowMs: 100, leaseMs: 10 });
    expect(steps).toHaveLength(1);
    expect(apply(leased({ progress: 40 }), steps[0])?.lastCommitAtMs).toBeUndefined();
  });
});

describe('progressCommitsOf', () => {
  const c = (partition: number, from = 10) => ({ range: { ...held, partition, from }, expectProgress: 10, to: 20, nowMs: 1, leaseMs: 1 });

  it('keeps the progress of distinct ranges of one stream, in order, and nothing else an input carries', () => {
    const withWrites = { ...c(1), sinkWrites: [{ put: { table: 'x', item: {} } }] };
    expect(progressCommitsOf([c(0), withWrites, c(0, 200)])).toEqual([c(0), c(1), c(0, 200)]);
  });

  it('refuses one range twice, or several streams', () => {
    expect(() => progressCommitsOf([c(0), c(1), c(0)])).toThrow(ValidationError);
    expect(() => progressCommitsOf([c(0), { ...c(1), range: { ...c(1).range, stream: 'other' } }])).toThrow(ValidationError);
  });
});

describe('beginBatchStep', () => {
  it('records a batch of at least one offset inside the range, at the position held, once per batch', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 10, max: 110 }),
        fc.integer({ min: 0, max: 200 }),
        fc.option(fc.integer({ min: 11, max: 110 }), { nil: undefined }),
        (progress, until, pendingUntil) => {
          const r = leased({ progress, ...(pendingUntil !== undefined ? { pendingUntil } : {}) });
          const out = apply(r, beginBatchStep({ range: held, expectProgress: progress, until, nowMs: 1, leaseMs: 1 }));
          const ok = until > progress && until <= 110 && (pendingUntil === undefined || pendingUntil === until);
          expect(out !== undefined).toBe(ok);
          if (out) expect(out.pendingUntil).toBe(until);
        },
      ),
    );
  });
});

describe('completeRangeSteps', () => {
  const stats = { records: 5, processingMs: 10, schedulingDelayMs: 1, finishedAtMs: 9 };
  const completion = { range: held, expectProgress: 40, nowMs: 9, stats, observedRecordsPerSec: 50 };

  it('finishes the range at its end from the committed position, ending a batch pending there only', () => {
    const [range] = completeRangeSteps(completion, true) as [UpdateStep, UpdateStep];
    expect(apply(leased({ progress: 40 }), range)).toMatchObject({ status: 'done', progress: 110, records: 5, finishedAtMs: 9 });
    expect(apply(leased({ progress: 40, pendingUntil: 110 }), range)?.pendingUntil).toBeUndefined();
    expect(apply(leased({ progress: 40, pendingUntil: 60 }), range)).toBeUndefined();
    expect(apply(leased({ progress: 41 }), range)).toBeUndefined();
    expect(apply(leased({ progress: 40, leaseToken: 'B' }), range)).toBeUndefined();
    expect(apply(leased({ progress: 40, status: 'failed' }), range)).toBeUndefined();
  });

  it('keeps the stats on the range, and advances the committed offset only from the range start, in the range incarnation', () => {
    const [range, partition] = completeRangeSteps(completion, true) as [UpdateStep, UpdateStep];
    expect(apply(leased({ progress: 40 }), range)).toMatchObject({ records: 5, processingMs: 10, schedulingDelayMs: 1, finishedAtMs: 9 });
    const p = partitionState({ committed: 10, nextFrom: 110 });
    expect(meets(p, partition.when) && changed(p, partition.change)).toMatchObject({ committed: 110, observedRecordsPerSec: 50 });
    expect(meets(partitionState({ committed: 5, nextFrom: 110 }), partition.when)).toBe(false);
    expect(meets(partitionState({ committed: 10, nextFrom: 110, incarnation: 1 }), partition.when)).toBe(false);
    const [, alone] = completeRangeSteps(completion, false) as [UpdateStep, UpdateStep];
    expect(changed(partitionState({ committed: 5 }), alone.change)).toMatchObject({ committed: 5, observedRecordsPerSec: 50 });
  });
});

describe('failRangeStep and releaseRangeStep', () => {
  it('apply for the holder only; a release keeps progress and is not an attempt when it progressed', () => {
    const failed = apply(leased({ progress: 50 }), failRangeStep({ range: held, status: 'parked', error: 'x'.repeat(5000), nowMs: 3 }));
    expect(failed).toMatchObject({ status: 'parked', leaseExpiresAtMs: 0, failedAtMs: 3, progress: 50 });
    expect(failed?.lastError).toHaveLength(4000);
    expect(apply(leased({ leaseToken: 'B' }), failRangeStep({ range: held, status: 'failed', error: 'x', nowMs: 3 }))).toBeUndefined();
    const released = apply(
      leased({ progress: 50, attempts: 2, dispatchedAtMs: 1 }),
      releaseRangeStep({ range: held, nowMs: 4, progressed: true }),
    );
    expect(released).toMatchObject({ status: 'planned', attempts: 1, progress: 50, releasedAtMs: 4 });
    expect(released?.dispatchedAtMs).toBeUndefined();
    expect(apply(leased({ attempts: 2 }), releaseRangeStep({ range: held, nowMs: 4, progressed: false }))?.attempts).toBe(2);
  });

  it('a hand-over is recorded as dispatched now and gives the attempt back, whether it progressed or not', () => {
    for (const progressed of [true, false]) {
      const step = releaseRangeStep({ range: held, nowMs: 4, progressed, handover: true });
      expect(apply(leased({ progress: 50, attempts: 2, dispatchedAtMs: 1, dispatches: 1 }), step)).toMatchObject({
        status: 'planned',
        leaseExpiresAtMs: 0,
        attempts: 1,
        progress: 50,
        dispatchedAtMs: 4,
        dispatches: 1,
      });
      expect(apply(leased({ leaseToken: 'B' }), step)).toBeUndefined();
    }
  });
});
