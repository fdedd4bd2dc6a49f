/** Dead letters as the processor writes them: sized to the store's published limits, then retention applied. */
import type { DeadLettersConfig } from '../config/schema';
import type { LedgerLimits } from '../ports/commit-limits';
import type { DeadLetter, DeadLetterHeader } from '../ports/ledger-state';
import type { HandlerRecord } from './handler-api';

const DAY_MS = 24 * 3600 * 1000;

/**
 * The dead letter for a rejected record, kept under the store's item limit (`limits.deadLetter`): the
 * value, key and headers are cut (in that order of priority) to fit, and `truncated` says so; headers
 * are kept whole and in order up to the first that no longer fits (`headersDropped` counts the rest).
 * The full record stays readable in Kafka at its offset while retention keeps it.
 */
export function deadLetterOf(
  limits: LedgerLimits['deadLetter'],
  at: { stream: string; rangeFrom: number; nowMs: number },
  r: HandlerRecord,
  error: string,
  attempts: number,
): DeadLetter {
  const keyBase64 = r.key ? r.key.subarray(0, limits.maxKeyBytes).toString('base64') : null;
  const headers: DeadLetterHeader[] = [];
  let headerBudget = limits.maxHeaderBytes;
  for (const h of r.headers) {
    const valueBase64 = h.value === null ? null : h.value.toString('base64');
    const bytes = Buffer.byteLength(h.key) + (valueBase64?.length ?? 0);
    if (bytes > headerBudget) break;
    headers.push({ key: h.key, valueBase64 });
    headerBudget -= bytes;
  }
  const headersDropped = r.headers.length - headers.length;
  const value = r.value;
  return {
    stream: at.stream,
    topic: r.topic,
    partition: r.partition,
    offset: r.offset,
    timestampMs: r.timestampMs,
    timestampType: r.timestampType,
    keyBase64,
    valueBase64: value ? value.subarray(0, limits.maxValueBytes).toString('base64') : null,
    valueBytes: value?.length ?? 0,
    truncated:
      headersDropped > 0 ||
      (value !== null && value.length > limits.maxValueBytes) ||
      (r.key !== null && r.key.length > limits.maxKeyBytes),
    headers,
    headersDropped: headersDropped > 0 ? headersDropped : undefined,
    error: error.slice(0, limits.maxErrorChars),
    attempts,
    rangeFrom: at.rangeFrom,
    createdAtMs: at.nowMs,
    kept: 'record',
  };
}

/**
 * Applies the stream's dead-letter retention: an expiry, and with `keep: "coordinates"` no copy of
 * key, value or headers (streams carrying personal data; Kafka keeps the record while it retains it).
 */
export function retained(d: DeadLetter, policy: DeadLettersConfig): DeadLetter {
  const expiresAtMs = d.createdAtMs + policy.retentionDays * DAY_MS;
  if (policy.keep === 'record') return { ...d, expiresAtMs };
  return {
    ...d,
    keyBase64: null,
    valueBase64: null,
    headers: [],
    headersDropped: undefined,
    truncated: false,
    kept: 'coordinates',
    expiresAtMs,
  };
}
