/** What one commit may carry on DynamoDB (the ledger's published `limits`). */
import type { LedgerLimits } from '../ports/commit-limits';

/**
 * What one commit may carry on DynamoDB. A transaction holds 100 actions (one is the progress update)
 * and 4 MB, with one action per item; keep a margin. Dead letters stay under the 400 KB item limit
 * after base64 (x4/3): value 200 KB (267 KB encoded) + key 16 KB (22 KB) + headers 64 KB encoded +
 * error 4 KB + fields < 400 KB.
 */
export const DYNAMODB_LIMITS: LedgerLimits = {
  maxSinkWrites: 98,
  maxSinkBytes: 3_500_000,
  // A marked write group is a call of single UpdateItems (a few in flight at once); the size bounds
  // the work between two kill points and what a lost lease leaves to redo.
  maxMarkedWrites: 100,
  deadLetter: { maxValueBytes: 200 * 1024, maxKeyBytes: 16 * 1024, maxHeaderBytes: 64 * 1024, maxErrorChars: 4000 },
};
