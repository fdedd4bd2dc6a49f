/** Ledger state of one partition of stream `s`, topic `t`, for the rule tests: the defaults, then what a case changes. */
import type { PartitionState, RangeState } from '../../../lib/ports/ledger-state';

/** An active partition item at `committed`/`nextFrom` (10 and 20 unless given). */
export const partitionState = (extra: Partial<PartitionState> = {}): PartitionState => ({
  stream: 's',
  topic: 't',
  partition: 0,
  status: 'active',
  startOffset: 0,
  committed: 10,
  nextFrom: 20,
  firstSeenAtMs: 0,
  ...extra,
});

/** A planned range `[from, until)` dispatched once, never leased, its progress at `from`. */
export const rangeState = (from: number, until: number, extra: Partial<RangeState> = {}): RangeState => ({
  stream: 's',
  topic: 't',
  partition: 0,
  from,
  until,
  status: 'planned',
  epoch: 1,
  plannedAtMs: 0,
  dispatches: 1,
  attempts: 0,
  progress: from,
  ...extra,
});
