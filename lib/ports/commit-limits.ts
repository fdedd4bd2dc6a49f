/**
 * What one commit may carry, as a store publishes it (`Ledger.limits`), the check a commit is held
 * to, and the error of a commit over them.
 */
import { AppError } from '../errors';
import type { SinkWrite } from './sink-write';

/**
 * What one commit may carry, as the store publishes it (`Ledger.limits`): the processor splits a chunk
 * whose sink writes do not fit, and sizes dead letters to fit one item. Both adapters refuse a commit
 * over them (CommitTooLargeError) before writing anything.
 */
export type LedgerLimits = {
  /** Sink writes in one `commitChunk` (beside the progress update and the chunk's dead letters). */
  maxSinkWrites: number;
  /** Their serialized size, in bytes of JSON. */
  maxSinkBytes: number;
  /** Sink writes in one `applyMarkedSinkWrites` call (one write per item). */
  maxMarkedWrites: number;
  /** Largest parts of a dead letter, raw bytes (before base64), so that one fits one stored item. */
  deadLetter: { maxValueBytes: number; maxKeyBytes: number; maxHeaderBytes: number; maxErrorChars: number };
};

/** Whether `writes` fit one commit: at most `limits`' count and bytes, and one write per item (puts excepted). */
export function fitsOneCommit(writes: SinkWrite[], limits: LedgerLimits): boolean {
  if (writes.length > limits.maxSinkWrites) return false;
  const items = new Set<string>();
  let bytes = 0;
  for (const w of writes) {
    const spec = 'put' in w ? w.put : 'delete' in w ? w.delete : w.update;
    const key = 'put' in w ? w.put.item : 'key' in spec ? spec.key : {};
    const id = `${spec.table ?? ''}|${JSON.stringify(key)}`;
    if (items.has(id) && !('put' in w)) return false;
    items.add(id);
    bytes += JSON.stringify(w).length;
  }
  return bytes <= limits.maxSinkBytes;
}

/** A commit over the store's published `limits`; nothing was written (the caller splits it). */
export class CommitTooLargeError extends AppError {
  constructor(writes: number, limits: LedgerLimits) {
    super(
      'COMMIT_TOO_LARGE',
      `${writes} sink writes do not fit one commit (at most ${limits.maxSinkWrites}, ${limits.maxSinkBytes} bytes, ` +
        'one write per item); nothing was written',
    );
  }
}
