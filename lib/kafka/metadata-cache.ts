/**
 * One KafkaMetadata adapter per distinct cluster connection, reused across streams and across warm
 * Lambda invocations (connections and metadata survive between runs).
 */
import type { KafkaConnectionConfig, StreamConfig } from '../config/schema';
import type { KafkaMetadata } from '../ports/kafka-metadata';
import { createKafka } from './client';
import { createKafkajsMetadata } from './metadata.kafkajs';

export type MetadataCache = {
  forStream(stream: StreamConfig): Promise<KafkaMetadata>;
  /** Sum of Kafka requests over every cached adapter. */
  requestCount(): number;
  closeAll(): Promise<void>;
};

/** Creates the cache; `create` defaults to the kafkajs adapter over `createKafka`. */
export function createMetadataCache(
  create: (cfg: KafkaConnectionConfig) => Promise<KafkaMetadata> = async (cfg) => createKafkajsMetadata(await createKafka(cfg)),
): MetadataCache {
  const byConnection = new Map<string, Promise<KafkaMetadata>>();
  const settled = new Set<KafkaMetadata>();
  return {
    forStream(stream) {
      const key = JSON.stringify(stream.kafka);
      let m = byConnection.get(key);
      if (!m) {
        m = create(stream.kafka).then((adapter) => {
          settled.add(adapter);
          return adapter;
        });
        // A failed creation (secret unavailable) is retried on the next call, not cached.
        m.catch(() => byConnection.delete(key));
        byConnection.set(key, m);
      }
      return m;
    },
    requestCount: () => [...settled].reduce((s, m) => s + m.requestCount(), 0),
    // Forgotten before they are closed: a call made meanwhile gets a new adapter, never one being closed.
    async closeAll() {
      const all = [...settled];
      settled.clear();
      byConnection.clear();
      await Promise.all(all.map((m) => m.close()));
    },
  };
}
