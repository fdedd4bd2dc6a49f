/**
 * Consumer-group commits of finished ranges (streams with `consumerGroup`), for standard lag tools:
 * the same in the Lambda runtime and in local runs. Best effort: the ledger is the source of truth.
 */
import type { StreamConfig } from '../config/schema';
import type { Adapters } from './compose';

/** Commits through the cluster's cached committer; after a failure, once more on a fresh one (its connections may be stale). */
export async function commitGroupOffset(
  adapters: Pick<Adapters, 'groupCommitterFor' | 'dropGroupCommitter'>,
  stream: StreamConfig,
  group: string,
  at: { topic: string; partition: number; offset: number },
): Promise<void> {
  try {
    await (await adapters.groupCommitterFor(stream)).commit(group, at);
  } catch {
    adapters.dropGroupCommitter(stream);
    await (await adapters.groupCommitterFor(stream)).commit(group, at);
  }
}
