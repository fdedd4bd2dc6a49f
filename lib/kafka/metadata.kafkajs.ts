/**
 * `KafkaMetadata` over kafkajs 2.2.4's internal Cluster: no consumer group, connections kept across
 * calls (warm Lambda), one Metadata request per `describeTopics`, and offsets batched per leader:
 * one ListOffsets request per leader broker and kind (earliest, latest, timestamp), whatever the
 * number of topics.
 */
import type { Kafka } from 'kafkajs';
import { ValidationError } from '../errors';
import type {
  IsolationLevel,
  KafkaMetadata,
  PartitionOffsets,
  TopicPartitions,
} from '../ports/kafka-metadata';
import {
  EARLIEST_TIMESTAMP,
  ISOLATION_LEVEL,
  KafkajsCluster,
  LATEST_TIMESTAMP,
  protocolError,
  type ListOffsetsTopic,
  type RawMetadata,
  type RawTopicMetadata,
} from './cluster.kafkajs';
import { KafkaError, toKafkaError } from './errors';

export type KafkajsMetadataOptions = {
  /** Extra attempts after a retriable error (stale leader, lost connection), metadata refreshed each time. Default 3. */
  retries?: number;
  /** Backoff before the first retry; doubles per retry, capped at 2 s. Default 100 ms. */
  retryBackoffMs?: number;
  /** Leaders cached longer than this are refreshed before fetching offsets. Default 60 s. */
  metadataMaxAgeMs?: number;
  /** Ask for topic ids (Metadata v10+) where the broker speaks it. Default true. */
  topicIds?: boolean;
};

export type KafkajsMetadata = KafkaMetadata & {
  /** Requests sent so far, by Kafka API name (ApiVersions, Metadata, ListOffsets, ...). */
  requestCounts(): Record<string, number>;
};

const NO_ERROR = 0;
const UNKNOWN_TOPIC_OR_PARTITION = 3;
const INVALID_TOPIC_EXCEPTION = 17;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Internal topics (`__consumer_offsets`, `__transaction_state`, `__share_group_state`, ...). */
export function isInternalTopic(topic: string, isInternal?: boolean): boolean {
  return isInternal === true || topic.startsWith('__');
}

/** A Kafka int64 offset (kafkajs gives strings) as a number; rejects what a number cannot hold exactly. */
export function toSafeOffset(value: string, what: string): number {
  let n: bigint;
  try {
    n = BigInt(value);
  } catch (cause) {
    throw new KafkaError(`${what}: broker returned a non-integer offset ${JSON.stringify(value)}`, { cause });
  }
  if (n > MAX_SAFE || n < -MAX_SAFE) {
    throw new KafkaError(`${what}: offset ${value} is beyond Number.MAX_SAFE_INTEGER and cannot be represented exactly`);
  }
  return Number(n);
}

type TP = { topic: string; partition: number };
const key = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

function flatten(partitions: TopicPartitions[]): TP[] {
  if (!Array.isArray(partitions)) throw new ValidationError('partitions must be an array of {topic, partitions}');
  const seen = new Set<string>();
  const out: TP[] = [];
  for (const tp of partitions) {
    if (typeof tp?.topic !== 'string' || tp.topic === '' || !Array.isArray(tp.partitions)) {
      throw new ValidationError(`invalid topic partitions: ${JSON.stringify(tp)}`);
    }
    for (const partition of tp.partitions) {
      if (!Number.isInteger(partition) || partition < 0) {
        throw new ValidationError(`invalid partition ${JSON.stringify(partition)} of topic ${tp.topic}`);
      }
      const k = key(tp.topic, partition);
      if (!seen.has(k)) {
        seen.add(k);
        out.push({ topic: tp.topic, partition });
      }
    }
  }
  return out;
}

function checkIsolationLevel(level: IsolationLevel): number {
  if (level !== 'read_committed' && level !== 'read_uncommitted') {
    throw new ValidationError(`isolation level must be read_committed or read_uncommitted, not ${JSON.stringify(level)}`);
  }
  return ISOLATION_LEVEL[level];
}

/** `pattern` as a whole-name matcher (without g/y, whose lastIndex would make `test` stateful). */
function wholeName(pattern: RegExp): RegExp {
  return new RegExp(`^(?:${pattern.source})$`, pattern.flags.replace(/[gy]/g, ''));
}

function topicError(topic: string, code: number): KafkaError {
  const cause = protocolError(code);
  return new KafkaError(`topic ${topic}: ${cause.message}`, { cause, type: cause.type, retriable: cause.retriable });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function isRetriable(e: unknown): boolean {
  if (e instanceof KafkaError) return e.retriable;
  if (e instanceof ValidationError) return false;
  const err = e as { retriable?: unknown; name?: unknown } | undefined;
  // A timed-out request already used requestTimeout (30 s by default): retrying could outlast the
  // Lambda; the next planner run retries instead.
  if (err?.name === 'KafkaJSRequestTimeoutError') return false;
  return err?.retriable === true;
}

export function createKafkajsMetadata(kafka: Kafka, opts: KafkajsMetadataOptions = {}): KafkajsMetadata {
  const retries = opts.retries ?? 5;
  const retryBackoffMs = opts.retryBackoffMs ?? 100;
  const metadataMaxAgeMs = opts.metadataMaxAgeMs ?? 60_000;

  let total = 0;
  const byApi: Record<string, number> = {};
  let cluster: KafkajsCluster | undefined;
  const getCluster = (): KafkajsCluster =>
    (cluster ??= new KafkajsCluster(kafka, {
      topicIds: opts.topicIds,
      onRequest: ({ apiName }) => {
        total += 1;
        byApi[apiName] = (byApi[apiName] ?? 0) + 1;
      },
    }));

  async function withRetries<T>(operation: string, fn: (attempt: number) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn(attempt);
      } catch (e) {
        if (attempt >= retries || !isRetriable(e)) throw toKafkaError(operation, e);
        await sleep(Math.min(retryBackoffMs * 2 ** attempt, 2000));
      }
    }
  }

  /** Leader node id -> topic -> partitions, from cached metadata when it covers every partition. */
  async function leadersFor(tps: TP[], forceRefresh: boolean): Promise<Map<number, Map<string, number[]>>> {
    const c = getCluster();
    const topics = [...new Set(tps.map((tp) => tp.topic))];
    const resolve = (metadata: RawMetadata | null, strict: boolean): Map<number, Map<string, number[]>> | undefined => {
      if (!metadata) return undefined;
      const byTopic = new Map<string, RawTopicMetadata>(metadata.topicMetadata.map((t) => [t.topic, t]));
      const brokers = new Set(metadata.brokers.map((b) => b.nodeId));
      const leaders = new Map<number, Map<string, number[]>>();
      for (const { topic, partition } of tps) {
        const t = byTopic.get(topic);
        const p = t?.topicErrorCode === NO_ERROR ? t.partitionMetadata.find((x) => x.partitionId === partition) : undefined;
        if (!t || !p || p.leader < 0 || !brokers.has(p.leader)) {
          if (!strict) return undefined;
          if (!t || t.topicErrorCode === UNKNOWN_TOPIC_OR_PARTITION || t.topicErrorCode === INVALID_TOPIC_EXCEPTION) {
            throw new KafkaError(`topic ${topic} does not exist`, { type: 'UNKNOWN_TOPIC_OR_PARTITION' });
          }
          if (t.topicErrorCode !== NO_ERROR) throw topicError(topic, t.topicErrorCode);
          if (!p) {
            throw new KafkaError(`partition ${topic}/${partition} does not exist`, { type: 'UNKNOWN_TOPIC_OR_PARTITION' });
          }
          throw new KafkaError(`partition ${topic}/${partition} has no leader`, { type: 'LEADER_NOT_AVAILABLE', retriable: true });
        }
        const perTopic = leaders.get(p.leader) ?? new Map<string, number[]>();
        leaders.set(p.leader, perTopic);
        perTopic.set(topic, [...(perTopic.get(topic) ?? []), partition]);
      }
      return leaders;
    };
    const cached = c.cachedMetadata();
    const fresh = Date.now() - cached.fetchedAt < metadataMaxAgeMs;
    const fromCache = !forceRefresh && fresh ? resolve(cached.metadata, false) : undefined;
    return fromCache ?? (resolve(await c.metadata(topics), true) as Map<number, Map<string, number[]>>);
  }

  /**
   * One ListOffsets request per leader for each timestamp spec, all in parallel. Returns, per spec,
   * topic/partition -> offset string.
   */
  async function listOffsets(tps: TP[], timestamps: number[], isolationLevel: number, forceRefresh: boolean): Promise<Array<Map<string, string>>> {
    const c = getCluster();
    const leaders = await leadersFor(tps, forceRefresh);
    const results = await Promise.all(
      timestamps.map(async (timestamp) => {
        const perLeader = await Promise.all(
          [...leaders].map(([nodeId, perTopic]) => {
            const topics: ListOffsetsTopic[] = [...perTopic].map(([topic, partitions]) => ({
              topic,
              partitions: partitions.map((partition) => ({ partition, timestamp })),
            }));
            return c.listOffsets(nodeId, isolationLevel, topics);
          }),
        );
        const offsets = new Map<string, string>();
        for (const response of perLeader.flat()) {
          for (const p of response.partitions) offsets.set(key(response.topic, p.partition), p.offset);
        }
        return offsets;
      }),
    );
    for (const { topic, partition } of tps) {
      for (const offsets of results) {
        if (!offsets.has(key(topic, partition))) {
          throw new KafkaError(`ListOffsets response lacks partition ${topic}/${partition}`, { retriable: true });
        }
      }
    }
    return results;
  }

  return {
    async describeTopics(selector) {
      let names: Set<string> | undefined;
      let matcher: RegExp | undefined;
      if (selector && 'topics' in selector && Array.isArray(selector.topics)) {
        if (!selector.topics.every((t) => typeof t === 'string')) throw new ValidationError('topics must be strings');
        names = new Set(selector.topics.filter((t) => t !== '' && !isInternalTopic(t)));
        if (names.size === 0) return [];
      } else if (selector && 'pattern' in selector && selector.pattern instanceof RegExp) {
        matcher = wholeName(selector.pattern);
      } else {
        throw new ValidationError('describeTopics needs {topics: string[]} or {pattern: RegExp}');
      }
      const wanted = names;
      return withRetries('describeTopics', async () => {
        const metadata = await getCluster().metadata(wanted ? [...wanted] : 'all');
        const out: TopicPartitions[] = [];
        for (const t of metadata.topicMetadata) {
          if (isInternalTopic(t.topic, t.isInternal)) continue;
          if (wanted ? !wanted.has(t.topic) : !matcher!.test(t.topic)) continue;
          if (t.topicErrorCode === UNKNOWN_TOPIC_OR_PARTITION || t.topicErrorCode === INVALID_TOPIC_EXCEPTION) continue;
          if (t.topicErrorCode !== NO_ERROR) throw topicError(t.topic, t.topicErrorCode);
          // Partition-level errors (no leader, replica offline) do not make a partition disappear.
          const partitions = t.partitionMetadata.map((p) => p.partitionId).sort((a, b) => a - b);
          out.push({ topic: t.topic, partitions, ...(t.topicId ? { topicId: t.topicId } : {}) });
        }
        return out.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0));
      });
    },

    async fetchOffsets(partitions, isolationLevel) {
      const level = checkIsolationLevel(isolationLevel);
      const tps = flatten(partitions);
      if (tps.length === 0) return [];
      return withRetries('fetchOffsets', async (attempt) => {
        const [earliest, latest] = await listOffsets(tps, [EARLIEST_TIMESTAMP, LATEST_TIMESTAMP], level, attempt > 0);
        return tps.map(({ topic, partition }): PartitionOffsets => {
          const what = `${topic}/${partition}`;
          const e = toSafeOffset(earliest!.get(key(topic, partition))!, `earliest offset of ${what}`);
          const l = toSafeOffset(latest!.get(key(topic, partition))!, `latest offset of ${what}`);
          if (e < 0 || l < 0) throw new KafkaError(`broker returned no offset for ${what} (earliest ${e}, latest ${l})`);
          return { topic, partition, earliest: e, latest: l };
        });
      });
    },

    async fetchOffsetsForTimestamp(partitions, timestampMs, isolationLevel) {
      const level = checkIsolationLevel(isolationLevel);
      if (!Number.isSafeInteger(timestampMs) || timestampMs < 0) {
        throw new ValidationError(`timestamp must be a non-negative integer of milliseconds, not ${timestampMs}`);
      }
      const tps = flatten(partitions);
      if (tps.length === 0) return [];
      return withRetries('fetchOffsetsForTimestamp', async (attempt) => {
        const [byTime, latest] = await listOffsets(tps, [timestampMs, LATEST_TIMESTAMP], level, attempt > 0);
        return tps.map(({ topic, partition }) => {
          const what = `${topic}/${partition}`;
          const found = toSafeOffset(byTime!.get(key(topic, partition))!, `offset for timestamp ${timestampMs} of ${what}`);
          const l = toSafeOffset(latest!.get(key(topic, partition))!, `latest offset of ${what}`);
          if (l < 0) throw new KafkaError(`broker returned no latest offset for ${what}`);
          // -1: no record at or after the timestamp (below the last stable offset under read_committed).
          return { topic, partition, offset: found < 0 ? l : found };
        });
      });
    },

    requestCount: () => total,
    requestCounts: () => ({ ...byApi }),

    async close() {
      const c = cluster;
      cluster = undefined;
      if (c) {
        try {
          await c.disconnect();
        } catch (e) {
          throw toKafkaError('disconnect', e);
        }
      }
    },
  };
}
