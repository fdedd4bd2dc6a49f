/**
 * `maxRecordAgeMs` (the Kafka trigger's MaximumRecordAgeInSeconds): a record older than that when its
 * range was first leased is dead-lettered with cause `expired`, or skipped, as `expiredRecords` says.
 * Age is measured against the range's first lease, which the ledger keeps, not against each attempt's
 * clock: a retried range or a replayed folded batch must decide every record the same way.
 */
import type { RecordStage } from './record-gate';

export type ExpirySettings = {
  maxRecordAgeMs: number;
  /** `dead-letter` keeps a copy and its coordinates; `skip` only counts it (metric `RecordsExpired`). */
  expiredRecords: 'dead-letter' | 'skip';
};

/** The stage that ages records against `referenceMs` (the range's first lease, on the store's clock). */
export function createExpiryStage(settings: ExpirySettings, referenceMs: number): RecordStage {
  const oldestTimestampMs = referenceMs - settings.maxRecordAgeMs;
  return {
    name: 'maxRecordAgeMs',
    judge(record) {
      if (record.timestampMs >= oldestTimestampMs) return { kind: 'pass', record };
      if (settings.expiredRecords === 'skip') return { kind: 'skip', reason: 'expired' };
      const ageMs = referenceMs - record.timestampMs;
      return {
        kind: 'reject',
        cause: 'expired',
        error:
          `EXPIRED: record was ${ageMs} ms old when its range was first leased, ` +
          `older than maxRecordAgeMs (${settings.maxRecordAgeMs})`,
      };
    },
  };
}
