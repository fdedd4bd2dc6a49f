/**
 * Delivering dead letters to failure destinations on the in-memory ledger: right after the dead
 * letter's commit, a failed destination left pending with a backoff (and not tried again by the same
 * invocation), the planner's retry of what is due, and deliveries whose dead letter is gone dropped.
 */
import { createDeliverer, deliveryBackoffMs, RETRY_LIMITS } from '../../../lib/destinations/deliver';
import { DeliveryError } from '../../../lib/errors';
import type { FailureDelivery, FailureDestination, FailureDestinations } from '../../../lib/ports/failure-destination';
import { DELIVERY_GRACE_MS } from '../../../lib/ports/ledger';
import type { DestinationKind } from '../../../lib/ports/ledger-state';
import type { RecordsHandler } from '../../../lib/processor/handler-api';
import { FIXTURE_STREAM as S, processorFixture } from '../../support/processor-fixture';

const QUEUE = 'arn:aws:sqs:us-east-1:123456789012:dead-letters';

/** A destination keeping what it received; `down` makes it refuse (and counts the refusals). */
function fakeDestination(kind: DestinationKind) {
  const received: FailureDelivery[] = [];
  const state = { down: false, refused: 0 };
  const destination: FailureDestination = {
    kind,
    name: `fake ${kind}`,
    async deliver(d) {
      if (state.down) {
        state.refused += 1;
        throw new DeliveryError(`fake ${kind}: unavailable`);
      }
      received.push(d);
    },
  };
  return { destination, received, state };
}

/** Rejects the records whose value is "poison". */
const picky: RecordsHandler = {
  mode: 'at-least-once',
  handle: async (records) => {
    for (const r of records) if (r.value?.toString() === 'poison') throw new Error(`poison at ${r.offset}`);
  },
};

async function setup(poison: number[]) {
  const sqs = fakeDestination('sqs');
  const s3 = fakeDestination('s3');
  const destinations: FailureDestinations = { sqs: sqs.destination, s3: s3.destination };
  const t = await processorFixture({
    records: Array.from({ length: 6 }, (_, i) => ({ key: `k${i}`, value: poison.includes(i) ? 'poison' : 'ok' })),
    handler: picky,
    stream: {
      handler: { module: 'noop', mode: 'at-least-once' },
      onFailure: { sqs: QUEUE, s3: { bucket: 'dead-letters', prefix: 'dl/' } },
    },
    deps: { destinationsFor: async () => destinations },
  });
  const pending = () => t.ledger.readPendingDeliveries({ stream: S });
  return { ...t, sqs, s3, destinations, pending };
}

describe('delivery after the commit', () => {
  it('delivers each dead letter to every destination and leaves nothing pending', async () => {
    const t = await setup([1, 4]);
    const res = await t.run();
    expect(res).toMatchObject({ status: 'done', deadLetters: 2, deliveries: { delivered: 4, failed: 0, errors: [] } });
    expect(t.sqs.received.map((d) => d.idempotencyKey)).toEqual(['payments/0/1', 'payments/0/4']);
    expect(t.s3.received.map((d) => d.objectKey)).toEqual([
      'dl/s/payments/000000/00000000000000000001.json',
      'dl/s/payments/000000/00000000000000000004.json',
    ]);
    expect(JSON.parse(t.sqs.received[0]!.body)).toMatchObject({ deadLetter: { offset: 1, cause: 'handler', attempts: 3 } });
    expect(await t.pending()).toEqual([]);
    // The ledger still records both, with the destinations they were owed.
    expect(t.ledger.store(S).deadLetters.map((d) => [d.offset, d.deliveries])).toEqual([
      [1, ['s3', 'sqs']],
      [4, ['s3', 'sqs']],
    ]);
  });

  it('leaves a failed delivery pending with a backoff, tries that destination once per invocation, and the range completes', async () => {
    const t = await setup([1, 4]);
    t.sqs.state.down = true;
    const res = await t.run();
    expect(res).toMatchObject({ status: 'done', deadLetters: 2, deliveries: { delivered: 2, failed: 1 } });
    expect(res.deliveries?.errors[0]).toMatch(/^payments\/0\/1 -> fake sqs: fake sqs: unavailable$/);
    expect(t.sqs.state.refused).toBe(1); // the fault fired, once: the second dead letter did not wait on it
    expect(t.s3.received).toHaveLength(2);
    const now = t.now();
    expect(await t.pending()).toEqual([
      expect.objectContaining({
        offset: 1,
        destination: 'sqs',
        attempts: 1,
        nextAttemptAtMs: now + deliveryBackoffMs(1),
        lastError: 'fake sqs: unavailable',
      }),
      expect.objectContaining({ offset: 4, destination: 'sqs', attempts: 0, nextAttemptAtMs: now + DELIVERY_GRACE_MS }),
    ]);
  });

  it('leaves every delivery pending when the destinations cannot be made, and still completes', async () => {
    const t = await setup([2]);
    const res = await t.run({ destinationsFor: async () => Promise.reject(new Error('no producer')) });
    expect(res).toMatchObject({ status: 'done', deadLetters: 1, deliveries: { delivered: 0, failed: 0 } });
    expect(res.deliveries?.errors).toEqual(['failure destinations of s: Error: no producer']);
    expect((await t.pending()).map((p) => p.destination)).toEqual(['s3', 'sqs']);
  });
});

describe("the planner's retry", () => {
  it('delivers what is due once the destination is back, and nothing before it is due', async () => {
    const t = await setup([1]);
    t.sqs.state.down = true;
    await t.run();
    const retry = () => createDeliverer({ ledger: t.ledger, stream: t.stream, destinations: t.destinations, clock: t.now });
    const early = retry();
    await early.retryDue(t.now() + 1_000);
    expect(early.report).toEqual({ delivered: 0, failed: 0, dropped: 0, errors: [] });
    t.sqs.state.down = false;
    const later = retry();
    await later.retryDue(t.now() + deliveryBackoffMs(1));
    expect(later.report).toMatchObject({ delivered: 1, failed: 0 });
    // Delivered from the ledger's copy: the same document as the processor would have sent.
    expect(JSON.parse(t.sqs.received[0]!.body).payload.records['payments-0'][0]).toMatchObject({
      offset: 1,
      key: Buffer.from('k1').toString('base64'),
      value: Buffer.from('poison').toString('base64'),
    });
    expect(await t.pending()).toEqual([]);
  });

  it('backs off further after each failed retry, and bounds one run', async () => {
    const t = await setup([0, 1, 2, 3, 4, 5]);
    t.sqs.state.down = true;
    await t.run();
    const at = t.now() + 10 * 60_000;
    const d = createDeliverer({ ledger: t.ledger, stream: t.stream, destinations: t.destinations, clock: () => at });
    await d.retryDue(at, { ...RETRY_LIMITS, maxDeliveries: 3 });
    expect(d.report).toMatchObject({ delivered: 0, failed: 1 });
    const [first] = await t.pending();
    expect(first).toMatchObject({ offset: 0, attempts: 2, nextAttemptAtMs: at + deliveryBackoffMs(2) });
    expect(deliveryBackoffMs(2)).toBe(2 * deliveryBackoffMs(1));
    expect(deliveryBackoffMs(30)).toBe(15 * 60_000);
  });

  it('drops deliveries whose dead letter is gone or whose destination the stream no longer names', async () => {
    const t = await setup([1]);
    t.sqs.state.down = true;
    t.s3.state.down = true;
    await t.run();
    t.ledger.store(S).deadLetters.length = 0; // expired (TTL) or rewound
    const d = createDeliverer({ ledger: t.ledger, stream: t.stream, destinations: t.destinations });
    await d.retryDue(t.now() + 3_600_000);
    expect(d.report).toMatchObject({ delivered: 0, dropped: 2 });
    expect(await t.pending()).toEqual([]);

    const u = await setup([1]);
    u.sqs.state.down = true;
    await u.run();
    u.sqs.state.down = false;
    const s3Only = { ...u.stream, onFailure: { s3: u.stream.onFailure!.s3 } };
    const e = createDeliverer({ ledger: u.ledger, stream: s3Only, destinations: { s3: u.s3.destination } });
    await e.retryDue(u.now() + 3_600_000);
    expect(e.report).toMatchObject({ delivered: 0, dropped: 1 });
    expect(u.sqs.received).toEqual([]);
    expect(await u.pending()).toEqual([]);
  });
});
