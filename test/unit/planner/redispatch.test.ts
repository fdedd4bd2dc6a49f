/** Which open ranges a run sends again, and why (decidePlan, pure). */
import { parseStreamConfig } from '../../../lib/config/schema';
import { decidePlan, type PlanInput } from '../../../lib/planner/decide';
import type { PartitionState, RangeState } from '../../../lib/ports/ledger-state';

const stream = parseStreamConfig(
  { id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], maxAttempts: 3, processor: { timeoutMs: 60_000 } },
  'test',
);
const NOW = 1_000_000;
const LEASE_MS = stream.processor.leaseMs;

const partition: PartitionState = {
  stream: 's1',
  topic: 'orders',
  partition: 0,
  status: 'active',
  startOffset: 0,
  committed: 0,
  nextFrom: 10,
  firstSeenAtMs: 1,
};

const range = (over: Partial<RangeState>): RangeState => ({
  stream: 's1',
  topic: 'orders',
  partition: 0,
  from: 0,
  until: 10,
  status: 'planned',
  epoch: 5,
  plannedAtMs: NOW - 1000,
  dispatchedAtMs: NOW - 1000,
  dispatches: 1,
  attempts: 0,
  progress: 0,
  ...over,
});

const decide = (r: RangeState, over: Partial<PlanInput> = {}) =>
  decidePlan({
    stream,
    nowMs: NOW,
    epoch: 8,
    initial: false,
    known: [partition],
    discovered: [{ topic: 'orders', partitions: [0] }],
    offsets: [{ topic: 'orders', partition: 0, earliest: 0, latest: 10 }],
    openRanges: [r],
    confirmedEpoch: 7,
    ...over,
  });

describe('re-dispatch decisions', () => {
  it.each([
    ['sent recently by a confirmed run', range({}), {}, undefined],
    ['never sent (refused, or given back before a deadline)', range({ dispatchedAtMs: undefined, dispatches: 0 }), {}, 'never-dispatched'],
    ['planned by a run that did not confirm its dispatches', range({ epoch: 6 }), { confirmedEpoch: 5 }, 'dispatch-unconfirmed'],
    [
      'unconfirmed runs before any confirmation (upgrade from an older ledger)',
      range({ epoch: 6 }),
      { confirmedEpoch: undefined },
      'dispatch-unconfirmed',
    ],
    ['planned by the confirmed epoch itself', range({ epoch: 5 }), { confirmedEpoch: 5 }, undefined],
    ['planned by this very run (not possible on read, never re-sent)', range({ epoch: 8 }), { confirmedEpoch: 5 }, undefined],
    [
      'taken by a processor: clearly sent',
      range({ epoch: 6, status: 'leased', attempts: 1, leaseExpiresAtMs: NOW + 1 }),
      { confirmedEpoch: 5 },
      undefined,
    ],
    ['sent but no processor took it within the lease time', range({ dispatchedAtMs: NOW - LEASE_MS - 1 }), {}, 'not-started'],
    ['lease expired', range({ status: 'leased', attempts: 1, leaseExpiresAtMs: NOW - 1 }), {}, 'lease-expired'],
    ['failed', range({ status: 'failed', attempts: 1, lastError: 'x' }), {}, 'failed'],
    // Sent again once: until a processor takes it (a new attempt), that dispatch is waited for.
    ['failed, sent again and not taken yet', range({ status: 'failed', attempts: 1, redispatchedAtAttempts: 1 }), {}, undefined],
    [
      'failed, sent again but not taken within the lease time',
      range({ status: 'failed', attempts: 1, redispatchedAtAttempts: 1, dispatchedAtMs: NOW - LEASE_MS - 1 }),
      {},
      'failed',
    ],
    ['failed again after the re-sent range was taken', range({ status: 'failed', attempts: 2, redispatchedAtAttempts: 1 }), {}, 'failed'],
    [
      'lease expired, sent again and not taken yet',
      range({ status: 'leased', attempts: 1, leaseExpiresAtMs: NOW - 1, redispatchedAtAttempts: 1 }),
      {},
      undefined,
    ],
    [
      'lease expired again after the re-sent range was taken',
      range({ status: 'leased', attempts: 2, leaseExpiresAtMs: NOW - 1, redispatchedAtAttempts: 1 }),
      {},
      'lease-expired',
    ],
    [
      'a live lease, however long ago the range was sent',
      range({ status: 'leased', attempts: 1, leaseExpiresAtMs: NOW, dispatchedAtMs: NOW - 10 * LEASE_MS }),
      {},
      undefined,
    ],
  ] as const)('%s', (_name, r, over, reason) => {
    const d = decide(r, over);
    expect(d.redispatch.map((x) => x.reason)).toEqual(reason ? [reason] : []);
    expect(d.parks).toEqual([]);
  });

  it('never parks an unconfirmed range, whatever its dispatch count', () => {
    const d = decide(range({ epoch: 6, dispatches: 10 }), { confirmedEpoch: 5 });
    expect(d.redispatch.map((x) => x.reason)).toEqual(['dispatch-unconfirmed']);
    expect(d.parks).toEqual([]);
  });

  it('parks a range no processor took after more than maxAttempts dispatches', () => {
    const d = decide(range({ dispatches: 4, dispatchedAtMs: NOW - LEASE_MS - 1 }));
    expect(d.redispatch).toEqual([]);
    expect(d.parks).toEqual([expect.objectContaining({ kind: 'park-range', error: 'no processor took the range after 4 dispatches' })]);
  });

  it('records a new range as sent by this run (one write per range)', () => {
    const d = decide(range({}), {
      openRanges: [],
      known: [{ ...partition, committed: 10 }],
      offsets: [{ topic: 'orders', partition: 0, earliest: 0, latest: 25 }],
    });
    expect(d.newRanges).toEqual([expect.objectContaining({ from: 10, until: 25, epoch: 8, dispatches: 1, dispatchedAtMs: NOW })]);
  });
});
