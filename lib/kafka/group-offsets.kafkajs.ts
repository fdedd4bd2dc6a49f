/**
 * Group offset commits through kafkajs's cluster internals (cluster.kafkajs.ts): one OffsetCommit to
 * the group's coordinator with generation -1 and no member id, as Java's consumer commits for
 * manually assigned partitions. Not kafkajs's `admin.setOffsets`: that one joins the group with a
 * consumer (a rebalance per commit) and never settles while a fresh coordinator is still loading.
 */
import type { Kafka } from 'kafkajs';
import type { GroupOffsetCommitter } from '../ports/group-offsets';
import { KafkajsCluster } from './cluster.kafkajs';
import { toKafkaError } from './errors';

/** A committer over the client's cluster; `close` drops its connections. */
export function createKafkajsGroupCommitter(kafka: Kafka): GroupOffsetCommitter {
  const cluster = new KafkajsCluster(kafka);
  return {
    async commit(group, at) {
      try {
        await cluster.commitOffsets(group, [{ topic: at.topic, partitions: [{ partition: at.partition, offset: String(at.offset) }] }]);
      } catch (err) {
        throw toKafkaError(`the offset commit of group ${group}`, err);
      }
    },
    close: () => cluster.disconnect(),
  };
}
