/**
 * topic-deleted: the streams subscribe by pattern to two topics; the second is deleted after a
 * planning round, with ranges of it planned and not yet read. Its partitions must be retired with
 * TOPIC_DELETED, its ranges end done or parked, and the other topic carry on.
 */
import type { LedgerSnapshot } from '../invariants';
import { createScenarioTopics } from '../scenario-resources';
import type { Queued, RoundScenario, Run } from '../scenario';
import { waitFor } from '../../support/wait-for';

/** How long the broker may take to drop a deleted topic from its listing (deletion is asynchronous). */
const DELETION_LISTED_MS = 30_000;

async function deleteTopic(run: Run, deletedTopic: string, queue: Queued[]): Promise<void> {
  const { env } = run;
  await run.doomedProducer?.disconnect();
  run.doomedProducer = undefined;
  await env.admin.deleteTopics({ topics: [deletedTopic], timeout: 10_000 });
  run.topics.splice(run.topics.indexOf(deletedTopic), 1);
  await waitFor(`${deletedTopic} gone from the topic listing`, () => env.admin.listTopics(), {
    until: (names) => !names.includes(deletedTopic),
    timeoutMs: DELETION_LISTED_MS,
  });
  await run.produce(run.topic1, 0, 30);
  await run.produce(run.topic1, 1, 30);
  const planned = queue.filter((q) => q.range.topic === deletedTopic).length;
  run.injected = `a matching topic (2 partitions) deleted after planning round ${run.tally.rounds + 1} (${planned} of its ranges planned, not yet read); the other topic got 60 more records`;
}

/** The deleted topic's partitions retired, its ranges done or parked; the surviving topic's partitions active at their end. */
function checkStream(run: Run, snap: LedgerSnapshot): void {
  const name = snap.meta?.stream ?? '?';
  for (const p of snap.partitions) {
    const k = `${p.topic}/${p.partition}`;
    const ranges = snap.ranges.filter((r) => r.topic === p.topic && r.partition === p.partition);
    if (p.topic === run.deletedTopic) {
      if (p.status !== 'retired' || !p.reason?.includes('TOPIC_DELETED'))
        run.problems.push(`${name}: ${k} of the deleted topic is ${p.status} (${p.reason ?? 'no reason'}), not retired with TOPIC_DELETED`);
      // Everything it had planned ends done, or parked because the partition is gone.
      for (const r of ranges) {
        if (r.status !== 'done' && !(r.status === 'parked' && r.lastError?.includes('PARTITION_DELETED'))) {
          run.problems.push(`${name}: range ${k} [${r.from}, ${r.until}) of the deleted topic ended ${r.status} (${r.lastError ?? ''})`);
        }
      }
    } else {
      const end = run.produced.filter((r) => r.topic === p.topic && r.partition === p.partition).length;
      if (p.status !== 'active' || p.committed !== end)
        run.problems.push(`${name}: surviving ${k} is ${p.status} at ${p.committed}, expected active at ${end}`);
    }
  }
  if (!snap.ranges.some((r) => r.topic === run.deletedTopic && r.status === 'parked'))
    run.problems.push(`${name}: no in-flight range of the deleted topic was parked (the deletion hit nothing in flight)`);
}

export const topicDeleted = (): RoundScenario => ({
  knobs: () => ({ pattern: true, partitions: 2 }),
  hasEvent: true,
  registered: 4,
  allows: { retired: true },
  async prepare(run) {
    // The second matching topic exists from the start; it is deleted mid-run. It gets a producer of
    // its own, disconnected once the topic is gone: kafkajs never forgets a topic it has produced to,
    // so every later metadata refresh of a shared producer would ask for it and fail.
    run.deletedTopic = `${run.id}-t2`;
    await createScenarioTopics(run.env, [{ topic: run.deletedTopic, numPartitions: 2 }]);
    run.doomedProducer = run.env.kafka.producer();
    await run.doomedProducer.connect();
    run.topics.push(run.deletedTopic);
  },
  async afterPlan(run, queue) {
    if (!run.deletedTopic || run.eventDone || run.tally.rounds < 1) return;
    // Ranges of the topic are planned (in flight) when it goes; the other topic carries on.
    run.eventDone = true;
    await deleteTopic(run, run.deletedTopic, queue);
  },
  check(run, f) {
    for (const snap of f.snaps) checkStream(run, snap);
    const retiredPart = (r: Run['produced'][number]) => f.partOf(f.snaps[0], r)?.status === 'retired';
    if (!run.produced.some((r) => r.topic === run.deletedTopic && retiredPart(r))) run.problems.push('deleted topic: no retired partition');
  },
});
