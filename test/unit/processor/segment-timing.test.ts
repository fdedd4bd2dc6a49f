/** When a continuous segment ends, hands over, renews an idle lease, waits for its predecessor and paces its reads (pure). */
import fc from 'fast-check';
import {
  awaitHandover,
  HANDOVER_CLOCK_SLACK_MS,
  heartbeatDue,
  pacedChunkRecords,
  pacer,
  paceDelayMs,
  SEGMENT_END_MARGIN_MS,
  segmentTiming,
} from '../../../lib/processor/segment-timing';

describe('segmentTiming', () => {
  const now = 1_000_000;
  it.each([
    { name: 'a deadline far off: the segment runs its segmentMs', deadline: now + 900_000, seg: 60_000, lead: 2_000, end: now + 60_000 },
    {
      name: 'a deadline within the segment: it ends the margin before it',
      deadline: now + 30_000,
      seg: 60_000,
      lead: 2_000,
      end: now + 30_000 - SEGMENT_END_MARGIN_MS,
    },
    {
      name: 'the deadline exactly a segment and the margin away: either rule gives the same end',
      deadline: now + 60_000 + SEGMENT_END_MARGIN_MS,
      seg: 60_000,
      lead: 2_000,
      end: now + 60_000,
    },
    { name: 'a deadline within the margin: it ends now, not before', deadline: now + 500, seg: 60_000, lead: 2_000, end: now },
    { name: 'a deadline already past: it ends now', deadline: now - 5_000, seg: 60_000, lead: 2_000, end: now },
    { name: 'no lead: the successor is invoked at the end', deadline: now + 900_000, seg: 10_000, lead: 0, end: now + 10_000 },
  ])('$name', ({ deadline, seg, lead, end }) => {
    const t = segmentTiming({ nowMs: now, deadlineAtMs: deadline, segmentMs: seg, handoverLeadMs: lead });
    expect(t).toEqual({ endAtMs: end, handoverAtMs: Math.max(now, end - lead) });
  });

  it('invokes the successor handoverLeadMs before the end, or at once when the segment is shorter than the lead', () => {
    expect(segmentTiming({ nowMs: 0, deadlineAtMs: 100_000, segmentMs: 10_000, handoverLeadMs: 2_000 })).toEqual({
      endAtMs: 10_000,
      handoverAtMs: 8_000,
    });
    // Cut short by the deadline to 1.5 s: the lead (2 s) reaches before the start.
    expect(segmentTiming({ nowMs: 0, deadlineAtMs: 2_500, segmentMs: 10_000, handoverLeadMs: 2_000 })).toEqual({
      endAtMs: 1_500,
      handoverAtMs: 0,
    });
  });

  it('property: now <= handoverAtMs <= endAtMs <= now + segmentMs, the end before the deadline margin unless that is past', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 45 }),
        fc.integer({ min: -1_000_000, max: 1_000_000 }),
        fc.integer({ min: 2_000, max: 900_000 }),
        fc.integer({ min: 0, max: 60_000 }),
        (nowMs, deadlineIn, segmentMs, handoverLeadMs) => {
          const deadlineAtMs = nowMs + deadlineIn;
          const t = segmentTiming({ nowMs, deadlineAtMs, segmentMs, handoverLeadMs });
          expect(t.handoverAtMs).toBeGreaterThanOrEqual(nowMs);
          expect(t.endAtMs).toBeGreaterThanOrEqual(nowMs);
          expect(t.handoverAtMs).toBeLessThanOrEqual(t.endAtMs);
          expect(t.endAtMs).toBeLessThanOrEqual(nowMs + segmentMs);
          expect(t.endAtMs).toBeLessThanOrEqual(Math.max(nowMs, deadlineAtMs - SEGMENT_END_MARGIN_MS));
          // The lead is kept whole where the segment is long enough for it.
          expect(t.endAtMs - t.handoverAtMs).toBe(Math.min(handoverLeadMs, t.endAtMs - nowMs));
        },
      ),
    );
  });
});

describe('heartbeatDue', () => {
  it.each([
    { since: 0, leaseMs: 3_000, due: false },
    { since: 999, leaseMs: 3_000, due: false },
    { since: 1_000, leaseMs: 3_000, due: true },
    { since: 2_500, leaseMs: 3_000, due: true },
    { since: 3_333, leaseMs: 10_000, due: false },
    { since: 3_334, leaseMs: 10_000, due: true },
    { since: 50_000, leaseMs: 10_000, due: true },
  ])('$since ms after the last write, lease $leaseMs ms: due $due', ({ since, leaseMs, due }) => {
    expect(heartbeatDue({ lastWriteAtMs: 5_000, nowMs: 5_000 + since, leaseMs })).toBe(due);
  });

  it('property: due exactly from a third of the lease on, so two more chances remain before it runs out', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 45 }),
        fc.integer({ min: 0, max: 400_000 }),
        fc.integer({ min: 3, max: 300_000 }),
        (at, since, leaseMs) => {
          expect(heartbeatDue({ lastWriteAtMs: at, nowMs: at + since, leaseMs })).toBe(since * 3 >= leaseMs);
        },
      ),
    );
  });
});

describe('awaitHandover', () => {
  const expires = 50_000;
  it.each([
    { name: 'the named predecessor, its lease running', holder: 'A', from: 'A', nowMs: 40_000, wait: true },
    { name: 'the named predecessor, at its lease end', holder: 'A', from: 'A', nowMs: expires, wait: true },
    { name: 'the named predecessor, within the clock slack', holder: 'A', from: 'A', nowMs: expires + HANDOVER_CLOCK_SLACK_MS, wait: true },
    {
      name: 'the named predecessor, past its lease and the slack',
      holder: 'A',
      from: 'A',
      nowMs: expires + HANDOVER_CLOCK_SLACK_MS + 1,
      wait: false,
    },
    { name: 'another holder (a duplicate invocation or another segment)', holder: 'B', from: 'A', nowMs: 40_000, wait: false },
    { name: 'no predecessor named (an invocation by the planner)', holder: 'A', from: undefined, nowMs: 40_000, wait: false },
    { name: 'no holder known', holder: undefined, from: 'A', nowMs: 40_000, wait: false },
  ])('$name: waits $wait', ({ holder, from, nowMs, wait }) => {
    expect(awaitHandover({ holderToken: holder, handoverFrom: from, leaseExpiresAtMs: expires, nowMs })).toBe(wait);
  });

  it('a lease with no expiry is waited for only the slack after time zero', () => {
    expect(awaitHandover({ holderToken: 'A', handoverFrom: 'A', leaseExpiresAtMs: undefined, nowMs: HANDOVER_CLOCK_SLACK_MS })).toBe(true);
    expect(awaitHandover({ holderToken: 'A', handoverFrom: 'A', leaseExpiresAtMs: undefined, nowMs: 10_000 })).toBe(false);
  });

  it('property: waits only for the named predecessor, and only until its lease and the slack have passed', () => {
    const token = fc.constantFrom('A', 'B', 'C');
    fc.assert(
      fc.property(
        fc.option(token, { nil: undefined }),
        fc.option(token, { nil: undefined }),
        fc.integer({ min: 0, max: 2 ** 45 }),
        fc.integer({ min: -100_000, max: 100_000 }),
        (holderToken, handoverFrom, leaseExpiresAtMs, nowFromExpiry) => {
          const nowMs = leaseExpiresAtMs + nowFromExpiry;
          const wait = awaitHandover({ holderToken, handoverFrom, leaseExpiresAtMs, nowMs });
          const predecessor = handoverFrom !== undefined && holderToken === handoverFrom;
          expect(wait).toBe(predecessor && nowFromExpiry <= HANDOVER_CLOCK_SLACK_MS);
        },
      ),
    );
  });
});

describe('paceDelayMs', () => {
  it.each([
    { name: 'no rate limit', records: 1_000_000, nowMs: 1, rate: undefined, delay: 0 },
    { name: 'a zero rate (no limit)', records: 1_000_000, nowMs: 1, rate: 0, delay: 0 },
    { name: 'nothing read yet', records: 0, nowMs: 0, rate: 10, delay: 0 },
    { name: 'under the rate', records: 50, nowMs: 10_000, rate: 10, delay: 0 },
    { name: 'exactly at the rate', records: 100, nowMs: 10_000, rate: 10, delay: 0 },
    { name: 'over the rate', records: 150, nowMs: 10_000, rate: 10, delay: 5_000 },
    { name: 'a fractional rate', records: 1, nowMs: 0, rate: 0.5, delay: 2_000 },
    { name: 'a delay rounded up to whole ms', records: 1, nowMs: 0, rate: 3, delay: 334 },
  ])('$name: $delay ms', ({ records, nowMs, rate, delay }) => {
    expect(paceDelayMs({ records, startedAtMs: 0, nowMs, ratePerSec: rate })).toBe(delay);
  });

  it('property: reading on after the delay keeps the average rate since the start at most ratePerSec, and no sooner would', () => {
    const rate = fc.oneof(fc.integer({ min: 1, max: 100_000 }), fc.double({ min: 0.01, max: 100_000, noNaN: true }));
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.integer({ min: 0, max: 10_000_000 }),
        rate,
        (records, startedAtMs, elapsedMs, ratePerSec) => {
          const nowMs = startedAtMs + elapsedMs;
          const delay = paceDelayMs({ records, startedAtMs, nowMs, ratePerSec });
          expect(Number.isInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(0);
          const readAtSec = (elapsedMs + delay) / 1000;
          // records <= rate x elapsed seconds (a relative 1e-9 for floating point).
          expect(records).toBeLessThanOrEqual(ratePerSec * readAtSec * (1 + 1e-9));
          // The delay is the shortest in whole ms: a millisecond sooner would exceed the rate.
          if (delay > 0) expect(records).toBeGreaterThan(ratePerSec * ((elapsedMs + delay - 1) / 1000) * (1 - 1e-9));
        },
      ),
    );
  });
});

describe('pacedChunkRecords', () => {
  it.each<[string, number | undefined, number, number, number]>([
    ["no rate: the reader's chunk", undefined, 100, 500, 500],
    ['what one commit interval allows', 1_000, 100, 500, 100],
    ["never above the reader's chunk", 100_000, 100, 500, 500],
    ['at least one record under a slow rate', 2, 100, 500, 1],
    ['rounded down', 25, 100, 500, 2],
  ])('%s', (_name, ratePerSec, intervalMs, maxRecords, expected) => {
    expect(pacedChunkRecords({ ratePerSec, intervalMs, maxRecords })).toBe(expected);
  });
});

describe('pacer', () => {
  it('reads chunks of one commit interval and waits from when its reading began, with an injected clock', () => {
    const p = pacer({ ratePerSec: 100, startedAtMs: 5_000, intervalMs: 50, maxRecords: 500 });
    expect(p.chunkRecords).toBe(5);
    expect(p.delayMs(0, 5_000)).toBe(0);
    // 50 records read 100 ms after the start: 400 ms ahead of 100 records/s.
    expect(p.delayMs(50, 5_100)).toBe(400);
    expect(p.delayMs(50, 5_500)).toBe(0);
  });

  it("without a rate: the reader's chunk, never a wait", () => {
    const p = pacer({ ratePerSec: undefined, startedAtMs: 0, intervalMs: 50, maxRecords: 500 });
    expect(p.chunkRecords).toBe(500);
    expect(p.delayMs(1_000_000, 1)).toBe(0);
  });
});
