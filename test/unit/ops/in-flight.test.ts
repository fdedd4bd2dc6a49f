/**
 * Progress inside ranges in flight, from in-memory ledger state: `status` (its table, its totals
 * line, --json's fields) and the live view show offsets done inside the ranges, not only the
 * partition's committed offset, and the batch a processor is writing.
 */
import { frameLine, renderFrame, type ProgressFrame } from '../../../lib/local/progress';
import { inFlightProgress, renderInFlight } from '../../../lib/ops/in-flight';
import { renderStatus, type StreamStatus } from '../../../lib/ops/status';
import type { RangeState } from '../../../lib/ports/ledger-state';

const range = (partition: number, from: number, until: number, progress: number, over: Partial<RangeState> = {}): RangeState => ({
  stream: 's1',
  topic: 't',
  partition,
  from,
  until,
  progress,
  status: 'leased',
  epoch: 1,
  plannedAtMs: 0,
  dispatches: 1,
  attempts: 1,
  ...over,
});

// 12 ranges of 166,666 or so offsets: 2,000,000 in all, 840,000 of them done.
const open: RangeState[] = [
  range(0, 0, 200_000, 200_000 - 0),
  range(1, 0, 200_000, 150_000),
  range(2, 0, 200_000, 100_000),
  range(3, 0, 200_000, 90_000),
  range(4, 0, 200_000, 80_000),
  range(5, 0, 200_000, 70_000),
  range(6, 0, 200_000, 60_000),
  range(7, 0, 200_000, 50_000),
  range(8, 0, 200_000, 40_000),
  range(9, 0, 100_000, 0, { status: 'planned' }),
  range(10, 0, 50_000, 0, { status: 'failed' }),
  range(11, 0, 50_000, 0),
  // Parked: needs an operator, not in flight.
  range(12, 0, 999, 10, { status: 'parked' }),
];

describe('progress inside ranges in flight', () => {
  it('sums offsets done inside the open ranges, parked ones aside', () => {
    const p = inFlightProgress(open);
    expect(p).toMatchObject({ ranges: 12, offsets: 2_000_000, done: 840_000, writing: [] });
    expect(renderInFlight(p)).toBe('in flight: 12 ranges, 840,000 of 2,000,000 offsets done inside them (42%)');
    expect(renderInFlight(inFlightProgress([]))).toBe('in flight: no ranges');
  });

  it('shows the batch a processor is writing, [progress, pendingUntil)', () => {
    const writing = { ...range(1, 0, 200_000, 150_000), pendingUntil: 160_000 } as RangeState;
    const p = inFlightProgress([writing, range(2, 0, 10, 10)]);
    expect(p.writing).toEqual([{ topic: 't', partition: 1, from: 0, until: 200_000, progress: 150_000, pendingUntil: 160_000 }]);
    expect(renderInFlight(p)).toMatch(/150,010 of 200,010 offsets done inside them.*; 1 writing a batch$/);
  });

  it('status: a "done inside" column per partition and the in-flight line under the totals', () => {
    const row = (partition: number, inFlightDone: number, inFlightOffsets: number) => ({
      topic: 't',
      partition,
      status: 'active' as const,
      committed: 0,
      nextFrom: 200_000,
      latest: 2_000_000,
      lag: 2_000_000,
      inFlight: inFlightOffsets ? 1 : 0,
      inFlightDone,
      inFlightOffsets,
      failures: 0,
      parked: 0,
      deadLetters: 0,
      dataLossRecords: 0,
      dataLoss: [],
      openRanges: [],
    });
    const writing = { ...range(1, 0, 200_000, 150_000), pendingUntil: 160_000 } as RangeState;
    const status: StreamStatus = {
      stream: 's1',
      atMs: 0,
      startedAtMs: 0,
      bounded: false,
      partitions: [row(0, 0, 0), row(1, 150_000, 200_000)],
      totals: { lag: 4_000_000, lagUnknownPartitions: 0, inFlight: 1, failures: 0, parked: 0, deadLetters: 0, dataLossRecords: 0 },
      inFlightProgress: inFlightProgress([writing]),
      unavailablePartitions: 0,
      recreated: [],
    };
    const text = renderStatus(status);
    expect(text).toMatch(/in flight +done inside/);
    expect(text).toMatch(/t +1 +active +0 +2000000 +2000000 +1 +150000\/200000 /);
    expect(text).toContain('in flight: 1 range, 150,000 of 200,000 offsets done inside them (75%); 1 writing a batch');
    expect(text).toContain('  t/1 [0, 200000) at 150000: writing [150000, 160000)');
    // --json prints the status object: the same figures, as fields.
    expect(JSON.parse(JSON.stringify(status))).toMatchObject({
      inFlightProgress: { ranges: 1, offsets: 200_000, done: 150_000 },
      partitions: [{ inFlightDone: 0 }, { inFlightDone: 150_000, inFlightOffsets: 200_000 }],
    });
  });

  it('live view: the in-flight line under the counters and done/size per partition', () => {
    const f: ProgressFrame = {
      elapsedMs: 5000,
      stream: 'demo',
      phase: 'producing',
      produced: 10,
      producedPerSec: 2,
      partitions: [
        {
          topic: 't',
          partition: 0,
          committed: 0,
          earliest: 0,
          latest: 200_000,
          lag: 200_000,
          inFlight: 1,
          inFlightDone: 84_000,
          inFlightOffsets: 200_000,
        },
      ],
      invocations: 1,
      plannerRuns: 3,
      inFlight: 1,
      inFlightProgress: inFlightProgress([range(0, 0, 200_000, 84_000)]),
      deadLetters: 0,
      errors: 0,
      events: [],
    };
    const lines = renderFrame(f);
    expect(lines).toContain('in flight: 1 range, 84,000 of 200,000 offsets done inside them (42%)');
    expect(lines.find((l) => /^t +0 /.test(l))).toMatch(/ 84000\/200000$/);
    expect(frameLine(f)).toMatch(/ inFlight=1 doneInside=84000\/200000 /);
  });
});
