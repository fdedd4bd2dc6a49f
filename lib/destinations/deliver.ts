/**
 * Delivering dead letters to a stream's failure destinations (`onFailure`), at least once. The
 * ledger's outbox holds one pending delivery per destination, written in the dead letter's own
 * commit; the processor delivers right after that commit and removes each delivery made; what
 * failed (or was never tried: a crash) stays pending, and the planner retries what is due, with
 * backoff, a bounded number per run. A destination that fails once is not tried again by the same
 * deliverer (one invocation, one planner run): a destination that is down costs one timeout, not
 * one per dead letter. Nothing here throws: a delivery that fails is a count and a line in `errors`.
 */
import type { StreamConfig } from '../config/schema';
import type { FailureDestinations } from '../ports/failure-destination';
import type { Ledger } from '../ports/ledger';
import { DESTINATION_KINDS, type DeadLetter, type DestinationKind, type PendingDelivery } from '../ports/ledger-state';
import { sameDeadLetter } from '../ports/ledger-rules/outbox';
import { buildDelivery, type RecordContents } from './message';

/** First retry 30 s after a failed attempt, doubling, at most every 15 minutes (until the dead letter expires). */
const BACKOFF_BASE_MS = 30_000;
const BACKOFF_MAX_MS = 15 * 60_000;
/** Most deliveries a planner run retries per stream, and the time it may spend on them. */
export const RETRY_LIMITS = { maxDeliveries: 25, budgetMs: 5_000 } as const;
/** Errors a deliverer keeps for its report (one line each). */
const MAX_ERRORS = 5;

/** When to try again after `attempts` failed attempts. */
export function deliveryBackoffMs(attempts: number): number {
  return Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempts - 1));
}

/** The destinations a stream's dead letters are owed, in delivery order (S3 first: others may name its object). */
export function destinationKinds(stream: Pick<StreamConfig, 'onFailure'>): DestinationKind[] {
  const o = stream.onFailure;
  return o ? DESTINATION_KINDS.filter((k) => o[k] !== undefined) : [];
}

/** What a deliverer did: made, failed (left pending with a backoff), dropped (its dead letter or destination is gone). */
export type DeliveryReport = { delivered: number; failed: number; dropped: number; errors: string[] };

export type Deliverer = {
  /** Right after the commit that wrote `letter`: delivers it to each destination it names. */
  afterCommit(letter: DeadLetter, record?: RecordContents): Promise<void>;
  /** The planner's retry: the stream's due deliveries, at most `limits.maxDeliveries`, within `limits.budgetMs`. */
  retryDue(nowMs: number, limits?: { maxDeliveries: number; budgetMs: number }): Promise<void>;
  readonly report: DeliveryReport;
};

export type DelivererDeps = {
  ledger: Ledger;
  stream: StreamConfig;
  destinations: FailureDestinations;
  clock?: () => number;
};

/** A deliverer for one processor invocation or one planner run of `stream`. */
export function createDeliverer(deps: DelivererDeps): Deliverer {
  const { ledger, stream, destinations } = deps;
  const clock = deps.clock ?? Date.now;
  const report: DeliveryReport = { delivered: 0, failed: 0, dropped: 0, errors: [] };
  const tripped = new Set<DestinationKind>();
  const note = (line: string) => {
    if (report.errors.length < MAX_ERRORS) report.errors.push(line);
  };

  /** One attempt at one destination; ledger errors leave the delivery as it was (pending). */
  const attempt = async (
    letter: DeadLetter,
    record: RecordContents | undefined,
    pending: Pick<PendingDelivery, 'destination' | 'attempts'>,
  ) => {
    const kind = pending.destination;
    const destination = destinations[kind];
    const ref = { stream: stream.id, ref: letter, destination: kind };
    if (tripped.has(kind) || !destination) return;
    const delivery = buildDelivery(
      { letter, record, bootstrapServers: stream.kafka.brokers },
      { kind, maxBodyBytes: destination.maxBodyBytes, s3: stream.onFailure?.s3 },
    );
    try {
      await destination.deliver(delivery);
    } catch (err) {
      tripped.add(kind);
      report.failed += 1;
      const line = (err as Error)?.message ?? String(err);
      note(`${delivery.idempotencyKey} -> ${destination.name}: ${line}`);
      const nextAttemptAtMs = clock() + deliveryBackoffMs(pending.attempts + 1);
      await ledger
        .postponeDelivery({ ...ref, expectAttempts: pending.attempts, nextAttemptAtMs, error: line.slice(0, 1000) })
        .catch((e: unknown) => note(`recording the failed delivery: ${(e as Error)?.message ?? String(e)}`));
      return;
    }
    report.delivered += 1;
    // Made: remove it. A failure here only means a later retry delivers it again (at least once).
    await ledger.completeDelivery(ref).catch((e: unknown) => note(`removing the made delivery: ${(e as Error)?.message ?? String(e)}`));
  };

  return {
    report,
    async afterCommit(letter, record) {
      for (const destination of DESTINATION_KINDS) {
        if (letter.deliveries?.includes(destination)) await attempt(letter, record, { destination, attempts: 0 });
      }
    },
    async retryDue(nowMs, limits = RETRY_LIMITS) {
      const started = clock();
      let due: PendingDelivery[];
      try {
        due = await ledger.readPendingDeliveries({ stream: stream.id, dueAtMs: nowMs, limit: limits.maxDeliveries });
      } catch (err) {
        return note(`reading pending deliveries: ${(err as Error)?.message ?? String(err)}`);
      }
      let letter: DeadLetter | undefined;
      for (const p of due) {
        if (clock() - started > limits.budgetMs) break;
        try {
          if (!letter || !sameDeadLetter(letter, p)) letter = await ledger.readDeadLetter(stream.id, p);
          // Its dead letter expired or was rewound, or the stream no longer names the destination: nothing to deliver.
          if (!letter || !stream.onFailure?.[p.destination]) {
            report.dropped += 1;
            await ledger.completeDelivery({ stream: stream.id, ref: p, destination: p.destination });
            continue;
          }
          await attempt(letter, undefined, p);
        } catch (err) {
          note(`retrying ${p.topic}/${p.partition}/${p.offset} -> ${p.destination}: ${(err as Error)?.message ?? String(err)}`);
        }
      }
    },
  };
}
