/**
 * partitions-added: the streams subscribe by pattern; after the first round a partition is added to
 * the topic (2 -> 3) and a second matching topic (2 partitions) is created, both then produced to.
 */
import { createScenarioTopics } from '../scenario-resources';
import type { RoundScenario, Run } from '../scenario';
import { waitFor } from '../../support/wait-for';

/** How long the broker may take to answer offsets for the added partition (metadata spreads asynchronously). */
const PARTITION_ADDED_MS = 30_000;

async function addPartitionsAndTopic(run: Run): Promise<void> {
  const { env, topic1 } = run;
  run.injected = 'partition added to the topic (2 -> 3) and a second matching topic (2 partitions) created mid-run';
  await env.admin.createPartitions({ topicPartitions: [{ topic: topic1, count: 3 }] });
  const topic2 = `${run.id}-t2`;
  await createScenarioTopics(env, [{ topic: topic2, numPartitions: 2 }]);
  run.topics.push(topic2);
  await waitFor(`offsets of all 3 partitions of ${topic1}`, () => env.admin.fetchTopicOffsets(topic1), {
    until: (o) => o.length === 3,
    timeoutMs: PARTITION_ADDED_MS,
  });
  // A producer connected after the change knows the new partition (kafkajs caches metadata).
  run.producer = env.kafka.producer();
  await run.producer.connect();
  await run.produce(topic1, 2, 60);
  await run.produce(topic1, 0, 20);
  await run.produce(topic2, 0, 40);
  await run.produce(topic2, 1, 40);
}

export const partitionsAdded = (): RoundScenario => ({
  knobs: () => ({ pattern: true, partitions: 2 }),
  hasEvent: true,
  registered: 5,
  async beforePlan(run) {
    if (run.eventDone || run.tally.rounds < 1) return;
    run.eventDone = true;
    await addPartitionsAndTopic(run);
  },
});
