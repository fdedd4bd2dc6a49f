/**
 * The planner write rules, once: what each `PlanWrite` requires of the items it touches and what it
 * changes, as item steps (item-step.ts). The in-memory ledger folds them into its maps; the DynamoDB
 * adapter sends them as the actions of one transaction, in the same order.
 */
import { ValidationError } from '../../errors';
import { CLOSE_MAX_OPEN_RANGES, type PlanWrite } from '../ledger';
import type { RangeState } from '../ledger-state';
import { isIncarnation, meets, partitionRef, rangeRef, type ItemRef, type ItemStep, type Requirement } from './item-step';
import { OPEN_UNTIL } from '../../ranges';

type PlanWriteOf<K extends PlanWrite['kind']> = Extract<PlanWrite, { kind: K }>;

const ACTIVE: Requirement = { field: 'status', is: 'active' };

/** Moves finished ranges out of their partition's live state, into the history. */
const archived = (ranges: readonly RangeState[] | undefined): ItemStep[] =>
  (ranges ?? []).map((value): ItemStep => ({ kind: 'archive-range', value }));

/**
 * Persists a range and moves its partition's planning cursor from `range.from` to `range.until`
 * (the partition's last planned time is its newest range's: see derived.ts), archiving the finished
 * ranges the planner read.
 */
function planRange(w: PlanWriteOf<'plan-range'>): ItemStep[] {
  const r = w.range;
  const { pid, backpressureRatePerSec } = w.partitionUpdate ?? {};
  const set = {
    nextFrom: r.until,
    ...(pid ? { pid } : {}),
    ...(backpressureRatePerSec !== undefined ? { backpressureRatePerSec } : {}),
  };
  return [
    ...archived(w.archive),
    { kind: 'create-range', value: r },
    {
      kind: 'update',
      ref: partitionRef(r.topic, r.partition),
      when: [ACTIVE, { field: 'nextFrom', is: r.from }, isIncarnation(r.incarnation)],
      change: { set },
    },
  ];
}

/**
 * Closes a partition incarnation: the partition replaced by the next incarnation, conditional on
 * everything the planner read of it; the record of the closed one; its open ranges removed.
 */
function closeIncarnation(w: PlanWriteOf<'close-incarnation'>): ItemStep[] {
  const c = w.closed;
  if (c.openRanges.length > CLOSE_MAX_OPEN_RANGES) {
    throw new ValidationError(
      `close-incarnation of ${c.topic}/${c.partition} names ${c.openRanges.length} ` +
        `open ranges; at most ${CLOSE_MAX_OPEN_RANGES} fit one transaction`,
    );
  }
  const when: Requirement[] = [
    { field: 'status', is: c.status },
    { field: 'committed', is: c.committed },
    { field: 'nextFrom', is: c.nextFrom },
    isIncarnation(c.incarnation),
    { field: 'topicId', is: c.topicId },
  ];
  return [
    ...archived(w.archive),
    { kind: 'replace-partition', ref: partitionRef(c.topic, c.partition), when, value: w.next },
    { kind: 'create-closed', value: c },
    ...c.openRanges.map((r): ItemStep => ({
      kind: 'delete',
      ref: rangeRef({ topic: c.topic, partition: c.partition, from: r.from, incarnation: c.incarnation }),
    })),
  ];
}

/**
 * Ends an open segment range where it stands (a stream back in micro-batches). A holder still
 * running is fenced: its next commit finds no range. No folded batch may be pending (its marked
 * sink writes must be finished by a holder first), and the partition's committed offset is the
 * range's progress (an open range's commits move both), so nothing read is lost or read twice.
 */
function endSegment(w: PlanWriteOf<'end-segment'>): ItemStep[] {
  const r = w.range;
  return [
    {
      kind: 'delete',
      ref: rangeRef(r),
      when: [
        { field: 'until', is: OPEN_UNTIL },
        { field: 'progress', is: w.expect.progress },
        { field: 'pendingUntil', is: undefined },
      ],
    },
    {
      kind: 'update',
      ref: partitionRef(r.topic, r.partition),
      when: [ACTIVE, { field: 'nextFrom', is: OPEN_UNTIL }, { field: 'committed', is: w.expect.progress }, isIncarnation(r.incarnation)],
      change: { set: { nextFrom: w.expect.progress } },
    },
  ];
}

/** Moves an active partition to `retired` or `failed`, with its reason. */
function endPartition(w: PlanWriteOf<'retire-partition' | 'fail-partition'>): ItemStep[] {
  const status = w.kind === 'retire-partition' ? 'retired' : 'failed';
  return [
    {
      kind: 'update',
      ref: partitionRef(w.topic, w.partition),
      when: [ACTIVE],
      change: { set: { status, reason: w.reason, statusChangedAtMs: w.nowMs } },
    },
  ];
}

/** One rule per planner write kind. */
const PLAN_WRITE_RULES: { [K in PlanWrite['kind']]: (w: PlanWriteOf<K>) => ItemStep[] } = {
  /** Persists a newly discovered partition (only if absent). */
  'register-partition': (w) => [{ kind: 'create-partition', value: w.partition }],
  'plan-range': planRange,
  /** Records a dispatch (and the attempts it was sent at) unless the range finished or was parked, from the dispatch count seen. */
  'mark-dispatched': (w) => [
    {
      kind: 'update',
      ref: rangeRef(w.range),
      when: [
        { field: 'status', isNot: ['done', 'parked'] },
        { field: 'dispatches', is: w.expect.dispatches },
      ],
      change: {
        set: { dispatchedAtMs: w.nowMs, ...(w.attempts !== undefined ? { redispatchedAtAttempts: w.attempts } : {}) },
        add: { dispatches: 1 },
      },
    },
  ],
  /** Clears a dispatch the dispatcher refused, so the next run sends the range at once. */
  'unmark-dispatch': (w) => [
    {
      kind: 'update',
      ref: rangeRef(w.range),
      when: [
        { field: 'status', is: 'planned' },
        { field: 'dispatches', is: w.expect.dispatches },
      ],
      change: { add: { dispatches: -1 }, remove: ['dispatchedAtMs'] },
    },
  ],
  /** Parks a range from the status and attempt count seen. */
  'park-range': (w) => [
    {
      kind: 'update',
      ref: rangeRef(w.range),
      when: [
        { field: 'status', is: w.expect.status },
        { field: 'attempts', is: w.expect.attempts },
      ],
      change: { set: { status: 'parked', lastError: w.error } },
    },
  ],
  'retire-partition': endPartition,
  'fail-partition': endPartition,
  /** Records a lost span and moves an idle partition (nothing in flight) past it. */
  'record-data-loss': (w) => [
    { kind: 'create-loss', value: w.loss },
    {
      kind: 'update',
      ref: partitionRef(w.loss.topic, w.loss.partition),
      when: [ACTIVE, { field: 'nextFrom', is: w.expectFrom }, { field: 'committed', is: w.expectFrom }],
      change: { set: { nextFrom: w.loss.until, committed: w.loss.until } },
    },
  ],
  /** Advances the committed offset forward only (`expect <= to`), within the planning cursor. */
  'advance-committed': (w) => [
    {
      kind: 'update',
      ref: partitionRef(w.topic, w.partition),
      when: [
        { field: 'committed', is: w.expect },
        { field: 'committed', atMost: w.to },
        { field: 'nextFrom', atLeast: w.to },
      ],
      change: { set: { committed: w.to } },
    },
  ],
  'close-incarnation': closeIncarnation,
  'end-segment': endSegment,
  /** Records the topic id of a partition that has none (a ledger written before topic ids). */
  'record-topic-id': (w) => [
    {
      kind: 'update',
      ref: partitionRef(w.topic, w.partition),
      when: [{ field: 'topicId', is: undefined }, isIncarnation(w.incarnation)],
      change: { set: { topicId: w.topicId } },
    },
  ],
};

/** The steps of one planner write: its conditions and changes, applied atomically, all or none. */
export function planWriteSteps(w: PlanWrite): ItemStep[] {
  return (PLAN_WRITE_RULES[w.kind] as (w: PlanWrite) => ItemStep[])(w);
}

/**
 * Whether a write's conditions on existing items hold of them as the planner read them (`read`
 * gives the item a step names): a planner leaves out a write that would be refused, the rule
 * deciding. Steps creating items are not judged (the store refuses one whose item exists).
 */
export function holdsAsRead(w: PlanWrite, read: (ref: ItemRef) => object | undefined): boolean {
  return planWriteSteps(w).every((s) => !('ref' in s) || !('when' in s) || s.when === undefined || meets(read(s.ref), s.when));
}
