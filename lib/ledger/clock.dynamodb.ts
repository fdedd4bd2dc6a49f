/**
 * The store's clock: DynamoDB's time as this process estimates it, from the `Date` header of every
 * DynamoDB response the given client receives. Leases are judged and written on it, so processes
 * whose own clocks disagree (by more than a lease, even) still agree on whether a lease has expired.
 *
 * Hand-written because the SDK's own correction (`systemClockOffset`) only moves after a request
 * was refused for skew (about 5 minutes), far more than a lease can tolerate.
 *
 * Each response bounds the offset `store - local`: the store stamped `Date` (whole seconds, so its
 * time was in [Date, Date + 1 s)) at some local instant between sending and receiving. Bounds from
 * successive responses are intersected (NTP's idea without the statistics), so the estimate's error
 * soon falls well below the header's 1 s resolution; a sample that contradicts the others (the local
 * clock was stepped) starts the estimate afresh.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { StoreClock } from '../ports/ledger';
import { translatingClient } from './errors.dynamodb';
import { keys } from './keys.dynamodb';

/** Bounds are intersected over at most this long: local clock rate drift would make older ones wrong. */
const INTERSECTION_MAX_AGE_MS = 10 * 60_000;
/**
 * A lease decision needs a response at most this old (else one probe first), which bounds the
 * window in which a step of the local clock goes unnoticed.
 */
const SAMPLE_MAX_AGE_MS = 60_000;
const DATE_RESOLUTION_MS = 1000;
const MIDDLEWARE_NAME = 'ledgerStoreClockSample';

type OffsetBounds = { loMs: number; hiMs: number; sinceMs: number; sampledAtMs: number };

export type DynamoStoreClock = StoreClock & {
  /** The current offset estimate `store - local` and its error bound (half width), if sampled. */
  offset(): { offsetMs: number; errorMs: number } | undefined;
};

/**
 * Creates the store clock of `client` (installs a response middleware on it, once). With no
 * response in the last minute, a reading costs one GetItem on the ledger table (a key that is never
 * written) first.
 */
export function createDynamoStoreClock(opts: { client: DynamoDBClient; tableName: string; localClock?: () => number }): DynamoStoreClock {
  const local = opts.localClock ?? Date.now;
  let bounds: OffsetBounds | undefined;

  const sample = (dateHeader: string | undefined, sentAtMs: number, receivedAtMs: number): void => {
    const stampedMs = dateHeader === undefined ? NaN : Date.parse(dateHeader);
    if (!Number.isFinite(stampedMs)) return;
    const fresh = {
      loMs: stampedMs - receivedAtMs,
      hiMs: stampedMs + DATE_RESOLUTION_MS - sentAtMs,
      sinceMs: receivedAtMs,
      sampledAtMs: receivedAtMs,
    };
    const loMs = Math.max(fresh.loMs, bounds?.loMs ?? -Infinity);
    const hiMs = Math.min(fresh.hiMs, bounds?.hiMs ?? Infinity);
    const age = bounds === undefined ? Infinity : receivedAtMs - bounds.sinceMs;
    const restart = !(age >= 0 && age <= INTERSECTION_MAX_AGE_MS) || loMs > hiMs;
    bounds = restart || !bounds ? fresh : { loMs, hiMs, sinceMs: bounds.sinceMs, sampledAtMs: receivedAtMs };
  };

  opts.client.middlewareStack.add(
    (next) => async (args) => {
      const sentAtMs = local();
      const out = await next(args);
      const headers = (out.response as { headers?: Record<string, string> } | undefined)?.headers ?? {};
      sample(headers.date ?? headers.Date, sentAtMs, local());
      return out;
    },
    // Innermost in the deserialize step: sees the raw HTTP response, error responses included.
    { step: 'deserialize', priority: 'low', name: MIDDLEWARE_NAME, override: true },
  );

  const offset = (): { offsetMs: number; errorMs: number } | undefined => {
    const age = bounds ? local() - bounds.sampledAtMs : NaN;
    if (!bounds || !(age >= 0 && age <= SAMPLE_MAX_AGE_MS)) return undefined;
    return { offsetMs: (bounds.loMs + bounds.hiMs) / 2, errorMs: (bounds.hiMs - bounds.loMs) / 2 };
  };

  // A failed probe fails the lease decision waiting for it: as a StoreError naming the table, like the ledger's own requests.
  const probing = translatingClient(opts.client, opts.tableName, "read the store's clock");
  const clock = async (): Promise<number> => {
    if (!offset()) {
      const probe = { pk: { S: keys.pk('') }, sk: { S: 'CLOCK' } };
      await probing.send(new GetItemCommand({ TableName: opts.tableName, Key: probe, ProjectionExpression: 'pk' }));
    }
    // A store that sends no Date header (none known) leaves the local clock as the only one.
    return Math.round(local() + (offset()?.offsetMs ?? 0));
  };
  return Object.assign(clock, { offset });
}
