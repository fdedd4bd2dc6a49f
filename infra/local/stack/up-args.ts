/**
 * `local:up`'s arguments: `--brokers N` and `--secured`, parsed strictly (../args.ts).
 */
import { PrerequisiteError } from '../../../lib/errors';
import { strictArgs } from '../args';

/** `--brokers N` (Kafka nodes of the local stack; default 1). */
export function parseUpArgs(args: string[]): { kafkaNodes: number; secured: boolean } {
  const usage = () =>
    new PrerequisiteError(
      `usage: local:up [--brokers N] [--secured] with N from 1 to 9 (--secured: one broker), not ${JSON.stringify(args.join(' '))}`,
    );
  const { values } = strictArgs(args, { brokers: { type: 'string' }, secured: { type: 'boolean' } }, usage);
  const secured = values.secured === true;
  const n = values.brokers === undefined ? 1 : Number(values.brokers);
  if (!Number.isInteger(n) || n < 1 || n > 9 || (secured && n > 1)) throw usage();
  return { kafkaNodes: n, secured };
}
