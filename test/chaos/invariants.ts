/**
 * Ledger invariant checker (issue #7): a pure function over one stream's ledger snapshot that reports
 * every violation of I1 (tiling), I2 (cursor/progress bounds) and I6 (nothing silently skipped).
 * The chaos suite runs it after every scenario; operators can run it against a live table
 * (`readLedgerSnapshot` in ./snapshot.dynamodb.ts).
 */
import type { ClosedIncarnation, DataLossEntry, PartitionState, RangeState, StreamMeta } from '../../lib/ports/ledger-state';
import { isOpenRange } from '../../lib/ranges';

export type LedgerSnapshot = {
  meta?: StreamMeta;
  partitions: PartitionState[];
  /** Every range item of the stream, done ones included. */
  ranges: RangeState[];
  dataLoss: DataLossEntry[];
  /** Closed incarnations (topics re-created under their name); absent = none. */
  closed?: ClosedIncarnation[];
};

export type InvariantId = 'I1' | 'I2' | 'I6';

export type Violation = {
  invariant: InvariantId;
  /** `topic/partition` */
  partition: string;
  message: string;
};

type Span = { from: number; until: number };

/** Sorted, merged union of spans (adjacent spans join). */
function merge(spans: Span[]): Span[] {
  const sorted = spans.filter((s) => s.until > s.from).sort((a, b) => a.from - b.from);
  const out: Span[] = [];
  for (const s of sorted) {
    const last = out.at(-1);
    if (last && s.from <= last.until) last.until = Math.max(last.until, s.until);
    else out.push({ ...s });
  }
  return out;
}

/** The parts of `[from, until)` not covered by the merged spans `cover`. */
function uncovered(from: number, until: number, cover: Span[]): Span[] {
  const holes: Span[] = [];
  let at = from;
  for (const c of cover) {
    if (c.until <= at) continue;
    if (c.from >= until) break;
    if (c.from > at) holes.push({ from: at, until: Math.min(c.from, until) });
    at = Math.max(at, c.until);
    if (at >= until) break;
  }
  if (at < until) holes.push({ from: at, until });
  return holes;
}

const fmt = (s: Span): string => `[${s.from}, ${s.until})`;

/**
 * A rewind (operator) moves a partition's cursor back and deletes the range items at or after it;
 * moving it forward leaves a gap on purpose. Gaps are tolerated only when the stream's META records a
 * rewind as its last change.
 */
function rewound(meta: StreamMeta | undefined): boolean {
  return /rewind/i.test(meta?.lastChange?.what ?? '');
}

/** I6: every incarnation below a partition's current one has its closed-incarnation record. */
function unrecordedIncarnations(
  partitions: PartitionState[],
  closed: ClosedIncarnation[],
  keyOf: (p: PartitionState) => string,
): Violation[] {
  const out: Violation[] = [];
  for (const p of partitions) {
    for (let i = 0; i < (p.incarnation ?? 0); i++) {
      if (!closed.some((c) => c.topic === p.topic && c.partition === p.partition && c.incarnation === i)) {
        out.push({ invariant: 'I6', partition: keyOf(p), message: `incarnation ${i} was replaced without a closed-incarnation record` });
      }
    }
  }
  return out;
}

/** A closed incarnation as a partition to check: its cursor as recorded, and the open ranges its close removed. */
function closedState(c: ClosedIncarnation): { state: PartitionState; removed: RangeState[] } {
  return {
    state: { ...c, firstSeenAtMs: 0 },
    removed: c.openRanges.map(
      (r) => ({ ...r, stream: c.stream, topic: c.topic, partition: c.partition, incarnation: c.incarnation }) as RangeState,
    ),
  };
}

/**
 * Checks I1, I2 and I6 for every partition of the snapshot; an empty list means the ledger is sound.
 *
 * Retired partitions (topic or partition deleted, topic unsubscribed) are checked like any other:
 * the planner stops planning and committing them, so their committed offset may stay below nextFrom
 * for good, with the ranges in [committed, nextFrom) left open (parked with PARTITION_DELETED, or as
 * the retirement found them). None of I1, I2 and I6 requires committed to reach nextFrom, so no check
 * is relaxed for them: their ranges must still tile, stay within bounds, and everything below
 * committed must have been processed or recorded lost.
 *
 * A partition whose topic was re-created has one set of ranges and data-loss entries per
 * incarnation (offsets restart at 0 in each). The current incarnation is checked against the
 * partition item; each closed one against its closed-incarnation record (its start, committed and
 * nextFrom when closed), with the open ranges its close removed counted as they were recorded. Every
 * incarnation below the current one must have such a record (I6: a re-creation is never silent).
 */
export function checkInvariants(snap: LedgerSnapshot): Violation[] {
  const out: Violation[] = [];
  const allowGaps = rewound(snap.meta);
  const keyOf = (x: { topic: string; partition: number; incarnation?: number }) =>
    x.incarnation ? `${x.topic}/${x.partition}#${x.incarnation}` : `${x.topic}/${x.partition}`;
  const rangesBy = new Map<string, RangeState[]>();
  for (const r of snap.ranges) rangesBy.set(keyOf(r), [...(rangesBy.get(keyOf(r)) ?? []), r]);
  const lossBy = new Map<string, DataLossEntry[]>();
  for (const l of snap.dataLoss) lossBy.set(keyOf(l), [...(lossBy.get(keyOf(l)) ?? []), l]);
  const closed = snap.closed ?? [];
  const known = new Set([...snap.partitions, ...closed].map(keyOf));
  for (const k of rangesBy.keys()) {
    if (!known.has(k))
      out.push({ invariant: 'I1', partition: k, message: 'ranges exist for a partition (or incarnation) the ledger does not know' });
  }
  out.push(...unrecordedIncarnations(snap.partitions, closed, keyOf));

  for (const { state: p, removed } of [
    ...snap.partitions.map((state) => ({ state, removed: [] as RangeState[] })),
    ...closed.map(closedState),
  ]) {
    const k = keyOf(p);
    const v = (invariant: InvariantId, message: string) => out.push({ invariant, partition: k, message });
    const ranges = [...(rangesBy.get(k) ?? []), ...removed].sort((a, b) => a.from - b.from || a.until - b.until);
    const losses = lossBy.get(k) ?? [];
    const lossCover = merge(losses);

    // I2: cursor bounds.
    if (p.committed > p.nextFrom) v('I2', `committed ${p.committed} is past nextFrom ${p.nextFrom}`);
    if (p.committed < p.startOffset) v('I2', `committed ${p.committed} is below startOffset ${p.startOffset}`);
    for (const l of losses) {
      if (l.until <= l.from) v('I6', `data-loss entry ${fmt(l)} is empty or inverted`);
    }

    // I1: ranges tile [startOffset, nextFrom); gaps only where data loss was recorded.
    let cursor = p.startOffset;
    for (const r of ranges) {
      const rs = `range ${fmt(r)} (${r.status})`;
      if (r.until <= r.from) {
        v('I1', `${rs} is empty or inverted`);
        continue;
      }
      if (r.from < cursor) {
        v('I1', `${rs} overlaps the previous range or starts below startOffset (expected from >= ${cursor})`);
      } else if (r.from > cursor) {
        const holes = uncovered(cursor, r.from, lossCover);
        if (holes.length && !allowGaps)
          v('I1', `gap ${holes.map(fmt).join(', ')} before ${rs} is covered by neither a range nor a data-loss entry`);
      }
      if (r.until > p.nextFrom) v('I1', `${rs} reaches past the planning cursor nextFrom ${p.nextFrom}`);
      cursor = Math.max(cursor, r.until);

      // I2: progress within [from, until]; done means progress == until.
      if (r.progress < r.from || r.progress > r.until) v('I2', `${rs} has progress ${r.progress} outside [${r.from}, ${r.until}]`);
      if (r.status === 'done' && r.progress !== r.until) v('I2', `${rs} is done with progress ${r.progress} != until ${r.until}`);
      if (r.until <= p.committed && r.status !== 'done') v('I2', `${rs} lies wholly below committed ${p.committed} but is not done`);
    }
    if (cursor < p.nextFrom) {
      const holes = uncovered(cursor, p.nextFrom, lossCover);
      if (holes.length && !allowGaps)
        v('I1', `gap ${holes.map(fmt).join(', ')} below nextFrom ${p.nextFrom} is covered by neither a range nor a data-loss entry`);
    }

    // I6: every offset in [startOffset, committed) is in a done range, the committed part of an open
    // segment range (continuous mode: its commits move the committed offset), or a recorded data-loss span.
    const segments = ranges.filter((r) => isOpenRange(r) && r.progress > r.from).map((r) => ({ from: r.from, until: r.progress }));
    const doneCover = merge([...ranges.filter((r) => r.status === 'done'), ...segments, ...losses]);
    const skipped = uncovered(p.startOffset, p.committed, doneCover);
    if (skipped.length && !allowGaps)
      v(
        'I6',
        `offsets ${skipped.map(fmt).join(', ')} below committed ${p.committed} ` +
          `are neither processed (done range) nor recorded as data loss`,
      );
  }
  return out;
}
