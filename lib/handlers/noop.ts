/**
 * The built-in no-op at-least-once handler: it receives every record and does nothing with it. It
 * measures what the runtime alone costs (the throughput baseline of `npm run bench:e2e`) and lets a
 * stream be dry-run end to end (planner, leases, reads, progress) without a sink.
 */
import type { AtLeastOnceHandler } from '../processor/handler-api';

/** Accepts every chunk and writes nothing; only the stream's progress is committed. */
export const noop: AtLeastOnceHandler = {
  mode: 'at-least-once',
  handle(): void {},
};
