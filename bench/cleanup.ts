/**
 * The end of a benchmark run on a shared stack: the topics, tables and consumer groups it created are
 * deleted (or, with `--keep`, listed as kept), in one stderr line, so stdout's last line stays the
 * result. On a private stack nothing is deleted one by one: the whole stack is removed.
 */
import { Kafka, logLevel } from 'kafkajs';
import { listed, removalLine, removeResources, type CreatedResources } from '../lib/local/tool-cleanup';
import { dynamoClientFromEnv } from '../lib/runtime/compose';

/** How long the broker gets to let go of a run's topics (the planner benchmark's 500 take the longest). */
const REMOVAL_TIMEOUT_MS = 300_000;
/** How long after the first clean-up pass the second looks again. */
const SECOND_PASS_DELAY_MS = 1000;

/**
 * Deletes what the run created on the shared stack at `brokers` (and DYNAMODB_ENDPOINT), with clients
 * of its own (the run's may be closed, or busy when a signal cut it short), or says what `--keep`
 * kept. Never throws: a failed deletion is said and sets exit code 1.
 */
export async function cleanUpSharedStack(p: {
  brokers: string;
  created: CreatedResources;
  keep: boolean;
  log: (line: string) => void;
}): Promise<void> {
  const { brokers, created, keep, log } = p;
  const what = listed(created);
  if (!what || keep) {
    log(!what ? 'nothing to delete' : `kept (--keep): ${what}`);
    return;
  }
  const admin = new Kafka({ clientId: 'bench-cleanup', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  const dynamo = dynamoClientFromEnv(process.env);
  try {
    await admin.connect();
    const first = await removeResources(created, { admin, dynamo }, { timeoutMs: REMOVAL_TIMEOUT_MS });
    // A creation still in flight when a signal came lands after the first pass found nothing to delete
    // (the name is recorded before the create is sent): a second pass, a moment later, takes it.
    await new Promise((r) => setTimeout(r, SECOND_PASS_DELAY_MS));
    const second = await removeResources(created, { admin, dynamo }, { timeoutMs: REMOVAL_TIMEOUT_MS });
    const removal = {
      topics: [...first.topics, ...second.topics],
      tables: [...first.tables, ...second.tables],
      groups: [...first.groups, ...second.groups],
      ms: first.ms + second.ms,
      errors: [...first.errors, ...second.errors],
    };
    log(removalLine(removal));
    if (removal.errors.length) process.exitCode = 1;
  } catch (err) {
    log(`could not delete ${what}: ${(err as Error)?.message ?? String(err)}`);
    process.exitCode = 1;
  } finally {
    await admin.disconnect().catch(() => undefined);
    dynamo.destroy();
  }
}
