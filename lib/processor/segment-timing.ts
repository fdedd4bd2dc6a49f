/**
 * When a continuous segment does what (docs/architecture.md, "Continuous mode"), as pure functions of
 * the time they are given: when it ends, when it invokes its successor, when an idle partition's lease
 * needs a heartbeat, how long a successor waits for the hand-over, how far a rate limit lets a
 * partition read.
 */

/** Time a segment keeps after its end for its last commits and its releases, before the invocation's deadline. */
export const SEGMENT_END_MARGIN_MS = 1_000;

/** How often a successor looks whether its predecessor has released the ranges it waits for. */
export const HANDOVER_POLL_MS = 20;

/** What a successor waits beyond the predecessor's lease: its store-clock estimate may be off by about this much. */
export const HANDOVER_CLOCK_SLACK_MS = 1_000;

export type SegmentTiming = {
  /** When the segment stops reading, flushes its last commits and hands over. */
  endAtMs: number;
  /** When it invokes its successor (`handoverLeadMs` before the end). */
  handoverAtMs: number;
};

/**
 * A segment started at `nowMs` ends after `segmentMs`, or earlier so that its last commits and
 * releases land before the invocation's deadline; it invokes its successor `handoverLeadMs` before.
 */
export function segmentTiming(t: { nowMs: number; deadlineAtMs: number; segmentMs: number; handoverLeadMs: number }): SegmentTiming {
  const endAtMs = Math.max(t.nowMs, Math.min(t.nowMs + t.segmentMs, t.deadlineAtMs - SEGMENT_END_MARGIN_MS));
  return { endAtMs, handoverAtMs: Math.max(t.nowMs, endAtMs - t.handoverLeadMs) };
}

/** An idle range's lease is renewed once a third of it has passed since its last write: two more chances before it runs out. */
export function heartbeatDue(t: { lastWriteAtMs: number; nowMs: number; leaseMs: number }): boolean {
  return t.nowMs - t.lastWriteAtMs >= t.leaseMs / 3;
}

/**
 * Whether a successor should keep waiting for a range its predecessor still holds: only while the
 * holder is the predecessor it was invoked by (a duplicate invocation, or a range another segment
 * took meanwhile, is not waited for) and the holder's lease has not run out (after that the lease
 * is taken as expired, as any range's is).
 */
export function awaitHandover(t: {
  holderToken: string | undefined;
  handoverFrom: string | undefined;
  leaseExpiresAtMs: number | undefined;
  nowMs: number;
}): boolean {
  if (t.handoverFrom === undefined || t.holderToken !== t.handoverFrom) return false;
  return t.nowMs <= (t.leaseExpiresAtMs ?? 0) + HANDOVER_CLOCK_SLACK_MS;
}

/**
 * How long a partition limited to `ratePerSec` waits before it hands more records to the handler:
 * a segment reads at most `ratePerSec` records a second averaged from its start (`maxRatePerPartition`
 * as a rate over time, where a micro-batch range caps rate x interval). 0 when it may go on.
 */
export function paceDelayMs(t: { records: number; startedAtMs: number; nowMs: number; ratePerSec: number | undefined }): number {
  if (t.ratePerSec === undefined || t.ratePerSec <= 0) return 0;
  const earliestMs = t.startedAtMs + (t.records / t.ratePerSec) * 1000;
  return Math.max(0, Math.ceil(earliestMs - t.nowMs));
}

/**
 * The largest chunk a paced partition hands to the handler: what its rate allows in one commit
 * interval (at least one record), so that a rate limit is not a burst of `maxRecords` at once.
 */
export function pacedChunkRecords(t: { ratePerSec: number | undefined; intervalMs: number; maxRecords: number }): number {
  if (t.ratePerSec === undefined || t.ratePerSec <= 0) return t.maxRecords;
  return Math.min(t.maxRecords, Math.max(1, Math.floor((t.ratePerSec * t.intervalMs) / 1000)));
}

/** A partition's pacing under its rate limit: the chunk it reads at most, and the wait before its next chunk. */
export type Pacer = { chunkRecords: number; delayMs(recordsRead: number, nowMs: number): number };

/** The pacer of a partition read at `ratePerSec` (unset: unlimited) since `startedAtMs`, committing every `intervalMs`. */
export function pacer(t: { ratePerSec: number | undefined; startedAtMs: number; intervalMs: number; maxRecords: number }): Pacer {
  return {
    chunkRecords: pacedChunkRecords(t),
    delayMs: (records, nowMs) => paceDelayMs({ records, nowMs, startedAtMs: t.startedAtMs, ratePerSec: t.ratePerSec }),
  };
}
