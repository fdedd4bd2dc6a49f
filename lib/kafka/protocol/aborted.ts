/**
 * Read-committed filtering of aborted transactions, the way Java's consumer does it
 * (CompletedFetch.nextFetchedRecord): the Fetch response lists the aborted transactions that
 * overlap the fetched data as (producer id, first offset). Walking batches in log order, a
 * producer becomes "aborted" once the walk reaches its transaction's first offset, its
 * transactional data batches are dropped from then on, and its ABORT marker ends that.
 *
 * kafkajs's filterAbortedMessages activates at most one aborted transaction per record and does
 * not sort the list, so with two producers whose aborted transactions interleave it delivers
 * aborted records; it also treats the control records themselves as messages.
 */

export type AbortedTransaction = {
  /** int64 as a decimal string (producer ids are opaque; never used in arithmetic). */
  producerId: string;
  firstOffset: number;
};

/** The batch header fields the filter needs. */
export type BatchHeader = {
  lastOffset: number;
  /** '-1' (or any negative value) when the batch has no producer id. */
  producerId: string;
  isTransactional: boolean;
  isControl: boolean;
  /** For control batches: the type of their (single) control record. */
  controlType?: ControlType;
};

export type ControlType = 'abort' | 'commit' | 'unknown';

/** A control record's type from its key (int16 version, int16 type: 0 = ABORT, 1 = COMMIT). */
export function controlRecordType(key: Buffer | null | undefined): ControlType {
  if (!key || key.length < 4) return 'unknown';
  const type = key.readInt16BE(2);
  return type === 0 ? 'abort' : type === 1 ? 'commit' : 'unknown';
}

const hasProducerId = (producerId: string): boolean => !producerId.startsWith('-');

/**
 * A stateful filter for the batches of one Fetch response, in log order: returns true when the
 * batch's data belongs to an aborted transaction and must be skipped. Control batches are never
 * reported aborted (they are skipped anyway, but must pass through to end their producer's abort).
 */
export function createAbortedBatchFilter(aborted: readonly AbortedTransaction[] | null): (batch: BatchHeader) => boolean {
  const pending = [...(aborted ?? [])].sort((a, b) => a.firstOffset - b.firstOffset);
  let next = 0;
  const abortedProducers = new Set<string>();
  return (batch) => {
    if (!hasProducerId(batch.producerId)) return false;
    // Every aborted transaction that started at or before this batch's end is now in progress.
    while (next < pending.length && pending[next]!.firstOffset <= batch.lastOffset) {
      abortedProducers.add(pending[next]!.producerId);
      next += 1;
    }
    if (batch.isControl) {
      if (batch.controlType === 'abort') abortedProducers.delete(batch.producerId);
      return false;
    }
    return batch.isTransactional && abortedProducers.has(batch.producerId);
  };
}
