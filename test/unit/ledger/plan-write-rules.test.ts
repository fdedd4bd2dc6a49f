/**
 * The planner write rules (ports/ledger-rules/plan-write.ts): for each write kind, when it applies to
 * the items it touches and what it changes, folded here over plain state with `meets`/`changed`.
 */
import fc from 'fast-check';
import { ValidationError } from '../../../lib/errors';
import { changed, meets, type ItemStep } from '../../../lib/ports/ledger-rules/item-step';
import { holdsAsRead, planWriteSteps } from '../../../lib/ports/ledger-rules/plan-write';
import type { PlanWrite } from '../../../lib/ports/ledger';
import type { ClosedIncarnation, PartitionState, RangeState } from '../../../lib/ports/ledger-state';
import { OPEN_UNTIL } from '../../../lib/ranges';
import { partitionState, rangeState } from './states';

const partition = partitionState;
const range = (extra: Partial<RangeState> = {}): RangeState => rangeState(20, 30, extra);

/** The one partition item and one range item a write may touch, as a test's whole ledger. */
type State = { partition?: PartitionState; range?: RangeState; created: string[]; deleted: number };

/** Folds a write's steps over `state`: all or none, as both ledgers do. */
function fold(state: State, w: PlanWrite): State | 'condition-failed' {
  const steps = planWriteSteps(w);
  const itemOf = (step: Extract<ItemStep, { ref: unknown }>) => (step.ref.item === 'partition' ? state.partition : state.range);
  const holds = (step: ItemStep): boolean => {
    if (step.kind === 'create-partition') return !state.partition;
    if (step.kind === 'create-range') return !state.range;
    if (step.kind === 'update' || step.kind === 'replace-partition') return meets(itemOf(step), step.when);
    if (step.kind === 'delete') return step.when === undefined || meets(itemOf(step), step.when);
    return true;
  };
  if (!steps.every(holds)) return 'condition-failed';
  const next: State = { ...state, created: [...state.created] };
  for (const step of steps) {
    if (step.kind === 'update') {
      const item = changed(itemOf(step) as object, step.change);
      if (step.ref.item === 'partition') next.partition = item as PartitionState;
      else next.range = item as RangeState;
    } else if (step.kind === 'replace-partition' || step.kind === 'create-partition') next.partition = step.value;
    else if (step.kind === 'create-range') next.range = step.value;
    else if (step.kind === 'delete') next.deleted++;
    else next.created.push(step.kind);
  }
  return next;
}

const at = (p?: PartitionState, r?: RangeState): State => ({ partition: p, range: r, created: [], deleted: 0 });
const ref = { topic: 't', partition: 0, from: 20 };

describe('planWriteSteps', () => {
  const planned = range({ from: 20, until: 30 });
  const planRange: PlanWrite = { kind: 'plan-range', range: planned, partitionUpdate: { backpressureRatePerSec: 5 } };
  const closed: ClosedIncarnation = {
    stream: 's',
    topic: 't',
    partition: 0,
    incarnation: 0,
    status: 'active',
    startOffset: 0,
    committed: 10,
    nextFrom: 20,
    openRanges: [{ from: 10, until: 20, status: 'leased', progress: 12 }],
    newStartOffset: 0,
    detectedAtMs: 9,
    reason: 'TOPIC_RECREATED',
  };
  const next = partition({ incarnation: 1, committed: 0, nextFrom: 0, topicId: 'new' });

  it.each<[string, PlanWrite, State, State | 'condition-failed']>([
    ['register-partition: absent', { kind: 'register-partition', partition: partition() }, at(), at(partition())],
    ['register-partition: present', { kind: 'register-partition', partition: partition() }, at(partition()), 'condition-failed'],
    ['plan-range: at the cursor', planRange, at(partition()), at(partition({ nextFrom: 30, backpressureRatePerSec: 5 }), planned)],
    ['plan-range: cursor moved', planRange, at(partition({ nextFrom: 25 })), 'condition-failed'],
    ['plan-range: partition failed', planRange, at(partition({ status: 'failed' })), 'condition-failed'],
    ['plan-range: other incarnation', planRange, at(partition({ incarnation: 1 })), 'condition-failed'],
    ['plan-range: range exists', planRange, at(partition(), planned), 'condition-failed'],
    [
      'mark-dispatched: as read',
      { kind: 'mark-dispatched', range: ref, expect: { dispatches: 1 }, nowMs: 9, attempts: 2 },
      at(undefined, range({ status: 'failed' })),
      at(undefined, range({ status: 'failed', dispatches: 2, dispatchedAtMs: 9, redispatchedAtAttempts: 2 })),
    ],
    [
      'mark-dispatched: done',
      { kind: 'mark-dispatched', range: ref, expect: { dispatches: 1 }, nowMs: 9 },
      at(undefined, range({ status: 'done' })),
      'condition-failed',
    ],
    [
      'mark-dispatched: dispatched since',
      { kind: 'mark-dispatched', range: ref, expect: { dispatches: 0 }, nowMs: 9 },
      at(undefined, range()),
      'condition-failed',
    ],
    [
      'unmark-dispatch: planned',
      { kind: 'unmark-dispatch', range: ref, expect: { dispatches: 1 } },
      at(undefined, range({ dispatchedAtMs: 3 })),
      at(undefined, range({ dispatches: 0 })),
    ],
    [
      'unmark-dispatch: taken meanwhile',
      { kind: 'unmark-dispatch', range: ref, expect: { dispatches: 1 } },
      at(undefined, range({ status: 'leased' })),
      'condition-failed',
    ],
    [
      'park-range: as read',
      { kind: 'park-range', range: ref, expect: { status: 'failed', attempts: 3 }, error: 'boom' },
      at(undefined, range({ status: 'failed', attempts: 3 })),
      at(undefined, range({ status: 'parked', attempts: 3, lastError: 'boom' })),
    ],
    [
      'park-range: taken again',
      { kind: 'park-range', range: ref, expect: { status: 'failed', attempts: 3 }, error: 'boom' },
      at(undefined, range({ status: 'leased', attempts: 4 })),
      'condition-failed',
    ],
    [
      'retire-partition: active',
      { kind: 'retire-partition', topic: 't', partition: 0, reason: 'TOPIC_DELETED', nowMs: 4 },
      at(partition()),
      at(partition({ status: 'retired', reason: 'TOPIC_DELETED', statusChangedAtMs: 4 })),
    ],
    [
      'fail-partition: already failed',
      { kind: 'fail-partition', topic: 't', partition: 0, reason: 'x', nowMs: 4 },
      at(partition({ status: 'failed' })),
      'condition-failed',
    ],
    [
      'record-data-loss: idle',
      {
        kind: 'record-data-loss',
        loss: { stream: 's', topic: 't', partition: 0, from: 20, until: 50, detectedAtMs: 1, reason: 'r' },
        expectFrom: 20,
      },
      at(partition({ committed: 20 })),
      { ...at(partition({ committed: 50, nextFrom: 50 })), created: ['create-loss'] },
    ],
    [
      'record-data-loss: in flight',
      {
        kind: 'record-data-loss',
        loss: { stream: 's', topic: 't', partition: 0, from: 20, until: 50, detectedAtMs: 1, reason: 'r' },
        expectFrom: 20,
      },
      at(partition({ committed: 10 })),
      'condition-failed',
    ],
    [
      'advance-committed: within the cursor',
      { kind: 'advance-committed', topic: 't', partition: 0, expect: 10, to: 20 },
      at(partition()),
      at(partition({ committed: 20 })),
    ],
    [
      'advance-committed: past the cursor',
      { kind: 'advance-committed', topic: 't', partition: 0, expect: 10, to: 21 },
      at(partition()),
      'condition-failed',
    ],
    [
      'close-incarnation: as read',
      { kind: 'close-incarnation', closed, next },
      at(partition()),
      { ...at(next), created: ['create-closed'], deleted: 1 },
    ],
    [
      'close-incarnation: topic id differs',
      { kind: 'close-incarnation', closed, next },
      at(partition({ topicId: 'old' })),
      'condition-failed',
    ],
    [
      'record-topic-id: none yet',
      { kind: 'record-topic-id', topic: 't', partition: 0, topicId: 'id' },
      at(partition()),
      at(partition({ topicId: 'id' })),
    ],
    [
      'record-topic-id: has one',
      { kind: 'record-topic-id', topic: 't', partition: 0, topicId: 'id' },
      at(partition({ topicId: 'x' })),
      'condition-failed',
    ],
    ['record-topic-id: missing partition', { kind: 'record-topic-id', topic: 't', partition: 0, topicId: 'id' }, at(), 'condition-failed'],
  ])('%s', (_what, w, before, after) => {
    expect(fold(before, w)).toEqual(after);
  });

  it('refuses a close-incarnation naming more open ranges than one atomic write takes', () => {
    const many = {
      ...closed,
      openRanges: Array.from({ length: 91 }, (_, i) => ({ from: i, until: i + 1, status: 'planned' as const, progress: i })),
    };
    expect(() => planWriteSteps({ kind: 'close-incarnation', closed: many, next })).toThrow(ValidationError);
  });

  it('advances the committed offset exactly when it is as read and the target lies between it and the cursor (property)', () => {
    fc.assert(
      fc.property(fc.nat(50), fc.nat(50), fc.nat(50), fc.nat(50), (committed, nextFrom, seen, to) => {
        const out = fold(at(partition({ committed, nextFrom })), { kind: 'advance-committed', topic: 't', partition: 0, expect: seen, to });
        const applies = committed === seen && seen <= to && to <= nextFrom;
        expect(out === 'condition-failed' ? undefined : out.partition?.committed).toBe(applies ? to : undefined);
      }),
    );
  });

  it('holdsAsRead judges an end-segment on the items as read exactly as applying it does (property)', () => {
    fc.assert(
      fc.property(
        fc.record({
          open: fc.boolean(),
          cursorOpen: fc.boolean(),
          pending: fc.boolean(),
          active: fc.boolean(),
          incarnation: fc.nat(1),
          committed: fc.nat(5),
          progress: fc.nat(5),
        }),
        (c) => {
          const r = range({ until: c.open ? OPEN_UNTIL : 30, progress: c.progress, ...(c.pending ? { pendingUntil: 25 } : {}) });
          const p = partition({
            status: c.active ? 'active' : 'retired',
            incarnation: c.incarnation,
            committed: c.committed,
            nextFrom: c.cursorOpen ? OPEN_UNTIL : 30,
          });
          const w: PlanWrite = { kind: 'end-segment', range: r, expect: { progress: r.progress } };
          const read = (item: { item: string }) => (item.item === 'range' ? r : p);
          expect(holdsAsRead(w, read)).toBe(fold(at(p, r), w) !== 'condition-failed');
        },
      ),
    );
  });
});
