/**
 * Built-in at-least-once handler that does nothing with the records: a throughput baseline (what
 * reading and committing cost without a sink) and a dry run of a stream's planning and reading.
 */
import type { AtLeastOnceHandler } from '../processor/handler-api';

/** Accepts every record and writes nothing. */
export const noop: AtLeastOnceHandler = {
  mode: 'at-least-once',
  handle() {},
};
