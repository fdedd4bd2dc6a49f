/**
 * The kafkajs `FetchTransport` of the range reader (range-reader.ts): partition leaders from cached
 * Metadata, Fetch (v11) and ListOffsets sent to the leader through kafkajs 2.2.4's internal Cluster
 * (cluster.kafkajs.ts). One cluster per transport, opened on first use and kept across reads (a warm
 * Lambda reads many ranges); `close()` releases its connections.
 */
import type { Kafka } from 'kafkajs';
import { EARLIEST_TIMESTAMP, ISOLATION_LEVEL, KafkajsCluster, LATEST_TIMESTAMP } from './cluster.kafkajs';
import { KafkaError } from '../errors';
import { PartitionNotFoundError } from '../ports/range-reader';
import { toSafeOffset } from './metadata.kafkajs';
import { isMissingTopicCode, NO_ERROR } from './protocol/error-codes';
import { protocolFailure, type FetchTransport } from './range-reader';
import { systemClock, type Clock } from '../retry';

/** The kafkajs transport: leaders from (cached) metadata, Fetch and ListOffsets to the leader. */
export function createKafkajsTransport(
  kafka: Kafka,
  opts: { metadataMaxAgeMs?: number; checkCrcs?: boolean; clock?: Clock } = {},
): FetchTransport {
  const metadataMaxAgeMs = opts.metadataMaxAgeMs ?? 5 * 60_000;
  const clock = opts.clock ?? systemClock;
  const leaders = new Map<string, { nodeId: number; at: number }>();
  let cluster: KafkajsCluster | undefined;
  const getCluster = (): KafkajsCluster => (cluster ??= new KafkajsCluster(kafka));
  const key = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

  async function leader(topic: string, partition: number, refresh: boolean): Promise<number> {
    const cached = leaders.get(key(topic, partition));
    if (!refresh && cached && clock.now() - cached.at < metadataMaxAgeMs) return cached.nodeId;
    const metadata = await getCluster().metadata([topic]);
    const now = clock.now();
    const t = metadata.topicMetadata.find((x) => x.topic === topic);
    if (!t || isMissingTopicCode(t.topicErrorCode)) {
      throw new PartitionNotFoundError(`topic ${topic} does not exist (deleted, or never created)`, { topic, partition });
    }
    if (t.topicErrorCode !== NO_ERROR) throw protocolFailure(`${topic}/${partition} (metadata)`, t.topicErrorCode);
    const brokers = new Set(metadata.brokers.map((b) => b.nodeId));
    for (const p of t.partitionMetadata) {
      if (p.leader >= 0 && brokers.has(p.leader)) leaders.set(key(topic, p.partitionId), { nodeId: p.leader, at: now });
      else leaders.delete(key(topic, p.partitionId));
    }
    const p = t.partitionMetadata.find((x) => x.partitionId === partition);
    if (!p) {
      throw new PartitionNotFoundError(
        `partition ${partition} of topic ${topic} does not exist (the topic has ${t.partitionMetadata.length} partitions)`,
        { topic, partition },
      );
    }
    const found = leaders.get(key(topic, partition));
    if (!found) {
      throw new KafkaError(`partition ${topic}/${partition} has no leader available`, {
        type: 'LEADER_NOT_AVAILABLE',
        retriable: true,
      });
    }
    return found.nodeId;
  }

  return {
    leader,
    fetch: (nodeId, req) => getCluster().fetch(nodeId, req, { checkCrcs: opts.checkCrcs }),
    async logOffsets(topic, partition) {
      const nodeId = await leader(topic, partition, true);
      const c = getCluster();
      const [earliest, latest] = await Promise.all(
        [EARLIEST_TIMESTAMP, LATEST_TIMESTAMP].map(async (timestamp) => {
          const responses = await c.listOffsets(nodeId, ISOLATION_LEVEL.read_uncommitted, [
            { topic, partitions: [{ partition, timestamp }] },
          ]);
          const offset = responses.find((r) => r.topic === topic)?.partitions.find((x) => x.partition === partition)?.offset;
          if (offset === undefined) throw new KafkaError(`ListOffsets response lacks ${topic}/${partition}`);
          return toSafeOffset(offset, `offset of ${topic}/${partition}`);
        }),
      );
      return { earliest: earliest!, latest: latest! };
    },
    async topicId(topic) {
      const metadata = await getCluster().metadata([topic]);
      return metadata.topicMetadata.find((x) => x.topic === topic && x.topicErrorCode === NO_ERROR)?.topicId;
    },
    async close() {
      const c = cluster;
      cluster = undefined;
      leaders.clear();
      if (c) await c.disconnect();
    },
  };
}
