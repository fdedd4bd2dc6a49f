/**
 * Processor messages: the reasons a range is parked or stopped, and the errors the processor raises,
 * as small functions of their values. Operators and tests match on this wording (the reason prefixes
 * DATA_LOSS, TOPIC_RECREATED, ... in particular), so it lives in one place.
 */

/** Why an invocation stopped when another processor took its range's lease (LeaseLostError). */
export const LEASE_LOST_REASON = 'another processor took the lease; stopped without further writes';

/** One record's sink writes exceed what one ledger commit holds, so it cannot be committed at all. */
export function recordWritesTooLargeMessage(writes: number, maxSinkWrites: number, maxSinkBytes: number): string {
  return (
    `the writes for one record do not fit one ledger commit (${writes} writes; at most ${maxSinkWrites}, ` +
    `${maxSinkBytes} bytes, one write per item)`
  );
}

/** Retention deleted offsets while a folded batch was being written again, so it cannot be completed exactly. */
export function foldReplayDataLossMessage(until: number, from: number, replayUntil: number): string {
  return (
    `DATA_LOSS: retention deleted offsets before ${until} while the batch [${from}, ${replayUntil}) was ` +
    'being written again; the items it had not reached yet cannot be completed exactly'
  );
}

/** fold.map rejects, on a replay, a record it folded before (NondeterministicFoldError). */
export function nondeterministicFoldMessage(key: string, from: number, until: number): string {
  return (
    `record ${key} was folded into the batch [${from}, ${until}) that is being written, but fold.map rejects it now: ` +
    'fold.map must be deterministic'
  );
}

/** A processor payload failed validation (`issues`: "path: message" joined by "; "). */
export function invalidProcessorPayloadMessage(issues: string): string {
  return (
    `invalid processor payload: ${issues} ` +
    '(accepted: {"stream","topic","partition","from","until","incarnation"?,"shard"?,"topicId"?}, ' +
    '{"stream","ranges": [{"topic","partition","from","until",...}]} ' +
    'or {"peek": {"stream"?,"topic","partition","offset","count"?}})'
  );
}

/** A peek payload names no stream although the config has several. */
export function peekStreamRequiredMessage(configured: readonly string[]): string {
  return `invalid processor payload: peek.stream is required with several streams (${configured.join(', ')})`;
}

/** A processor payload names a stream the config does not have. */
export function unknownProcessorStreamMessage(id: string, configured: readonly string[]): string {
  return `invalid processor payload: unknown stream ${id} (configured: ${configured.join(', ')})`;
}

/** A peek at a topic outside the stream's subscription (`subscription` describes it). */
export function peekTopicRefusedMessage(stream: string, topic: string, subscription: string): string {
  return `stream ${stream} does not consume topic ${topic} (its ${subscription}): peek reads only a stream's own topics`;
}

type RangeRef = { topic: string; partition: number; from: number; until: number };

/** A range payload whose end differs from the ledger's range of the same start. */
export function rangeMismatchMessage(range: RangeRef, ledgerUntil: number): string {
  return (
    `invalid processor payload: until=${range.until} does not match the ledger's range ` +
    `${range.topic}/${range.partition} [${range.from}, ${ledgerUntil}); nothing was changed`
  );
}

/** Retention deleted offsets of the range before they were processed, and the stream fails on data loss. */
export function rangeDataLossReason(range: { topic: string; partition: number }, progress: number, lostUntil: number): string {
  return (
    `DATA_LOSS: offsets [${progress}, ${lostUntil}) of ${range.topic}/${range.partition} were deleted by retention ` +
    'before they were processed (failOnDataLoss=true)'
  );
}

/** The topic was deleted and re-created since the range was planned: its offsets name other records. */
export function topicRecreatedReason(topic: string, topicIdNow: string, plannedTopicId: string): string {
  return (
    `TOPIC_RECREATED: topic ${topic} now has id ${topicIdNow}, the range was planned against ${plannedTopicId}; ` +
    'its records were not read'
  );
}
