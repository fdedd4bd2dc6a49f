/**
 * `KafkaMetadata` over kafkajs 2.2.4's internal Cluster: no consumer group, connections kept across
 * calls (warm Lambda), one Metadata request per `describeTopics`, and offsets batched per leader:
 * one ListOffsets request per leader broker and kind (earliest, latest, timestamp), whatever the
 * number of topics.
 */
import type { Kafka } from 'kafkajs';
import { ValidationError } from '../errors';
import {
  checkIsolationLevel,
  type CommittedOffset,
  type IsolationLevel,
  type KafkaMetadata,
  type OffsetsAnswer,
  type PartitionOffsets,
  type TimestampOffset,
  type TimestampOffsetsAnswer,
  type TopicPartitions,
  type UnavailableCode,
  type UnavailablePartition,
} from '../ports/kafka-metadata';
import {
  EARLIEST_TIMESTAMP,
  ISOLATION_LEVEL,
  KafkajsCluster,
  LATEST_TIMESTAMP,
  protocolError,
  type RawMetadata,
  type RawTopicMetadata,
} from './cluster.kafkajs';
import { KafkaError } from '../errors';
import { CONNECTION_ERROR_NAMES, isRetriableKafkaError, toKafkaError } from './errors';
import { partitionKey } from '../ranges';
import { nextRetryDelayMs, NO_JITTER, retry, systemClock, type RetryPolicy } from '../retry';
import { anchoredTopicPattern, isInternalTopic } from '../config/topics';
import { isMissingTopicCode, NO_ERROR } from './protocol/error-codes';

export type KafkajsMetadataOptions = {
  /** Extra attempts after a retriable error (stale leader, lost connection), metadata refreshed each time. Default 5. */
  retries?: number;
  /** Backoff before the first retry; doubles per retry, capped at 2 s. Default 100 ms (KAFKA_METADATA_RETRIES). */
  retryBackoffMs?: number;
  /** Leaders cached longer than this are refreshed before fetching offsets. Default 60 s. */
  metadataMaxAgeMs?: number;
  /**
   * No retry starts once this much time has passed since the call began (an offsets retry not once
   * it would start later); the partitions still failing are then unavailable for this call. Default
   * 2 s: a dead leader stays leader in the metadata for ~10 s (until the controller's session
   * timeout), far longer than a run should wait.
   */
  maxRetryElapsedMs?: number;
  /** Ask for topic ids (Metadata v10+) where the broker speaks it. Default true. */
  topicIds?: boolean;
};

export type KafkajsMetadata = KafkaMetadata & {
  /** Requests sent so far, by Kafka API name (ApiVersions, Metadata, ListOffsets, ...). */
  requestCounts(): Record<string, number>;
};

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const UNKNOWN = 'UNKNOWN_TOPIC_OR_PARTITION';

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
      const k = partitionKey(tp.topic, partition);
      if (!seen.has(k)) {
        seen.add(k);
        out.push({ topic: tp.topic, partition });
      }
    }
  }
  return out;
}

/** The protocol's number for an isolation level, the level checked first. */
const isolationLevelCode = (level: IsolationLevel): number => ISOLATION_LEVEL[checkIsolationLevel(level)];

function topicError(topic: string, code: number): KafkaError {
  const cause = protocolError(code);
  return new KafkaError(`topic ${topic}: ${cause.message}`, { cause, type: cause.type, retriable: cause.retriable });
}

/**
 * A metadata call (describeTopics, committed offsets) or an offsets look-up: 6 attempts, 100 ms
 * doubling to 2 s, no jitter (one caller per run, nobody to spread from), within 2 s. A dead leader
 * stays leader in the metadata for ~10 s (until the controller's session timeout), far longer than a
 * planner run should wait: the partitions still failing are unavailable for this run, and the next
 * run asks again. The budget is checked at each failure (a call that failed within 2 s is retried);
 * the offsets look-up starts no retry past it. Each attempt's kafkajs calls retry connects twice
 * themselves (KAFKAJS_RETRY).
 */
export const KAFKA_METADATA_RETRIES = {
  maxAttempts: 6,
  initialBackoffMs: 100,
  maxBackoffMs: 2_000,
  jitter: NO_JITTER,
  maxElapsedMs: 2_000,
  budget: 'failure',
} as const satisfies RetryPolicy;

/** Why one partition has no offsets yet; `retriable` ones are asked again within the call. */
type Miss = { code: UnavailableCode; reason: string; retriable: boolean; type?: string; cause?: unknown };
type PartialOffsets = { found: Map<string, string[]>; misses: Map<string, Miss> };

const NOT_LEADER_TYPES = new Set([
  'NOT_LEADER_FOR_PARTITION',
  'NOT_LEADER_OR_FOLLOWER',
  'LEADER_NOT_AVAILABLE',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
]);

/** A failed ListOffsets to `nodeId` as the reason of each of its partitions. */
function classify(nodeId: number, e: unknown): Miss {
  const outer = e as { name?: unknown; cause?: unknown } | undefined;
  // kafkajs's retrier wraps the last error (KafkaJSNumberOfRetriesExceeded, KafkaJSNonRetriableError).
  const wrapped = outer?.name === 'KafkaJSNumberOfRetriesExceeded' || outer?.name === 'KafkaJSNonRetriableError';
  const err = (wrapped && outer?.cause ? outer.cause : e) as { name?: unknown; type?: unknown; message?: unknown } | undefined;
  const name = typeof err?.name === 'string' ? err.name : 'Error';
  const type = typeof err?.type === 'string' ? err.type : undefined;
  const message = typeof err?.message === 'string' ? err.message : String(e);
  if (CONNECTION_ERROR_NAMES.has(name)) {
    // Transient (a request timeout too); a retry starts only within maxRetryElapsedMs, so a timed-out
    // request, which already waited requestTimeout, is not asked again within this call.
    const reason = `leader broker ${nodeId} unreachable: ${message}`;
    return { code: 'LEADER_UNREACHABLE', reason, retriable: isRetriableKafkaError(err), type: name, cause: e };
  }
  if (type !== undefined && NOT_LEADER_TYPES.has(type)) {
    return { code: 'NOT_LEADER', reason: `broker ${nodeId}: ${type}: ${message}`, retriable: true, type, cause: e };
  }
  if (type === 'UNKNOWN_TOPIC_OR_PARTITION') {
    return { code: 'UNKNOWN_PARTITION', reason: `broker ${nodeId}: ${message}`, retriable: false, type, cause: e };
  }
  return {
    code: 'ERROR',
    reason: `broker ${nodeId}: ${name}: ${message}`,
    retriable: isRetriableKafkaError(e),
    type: type ?? name,
    cause: e,
  };
}

/** Partitions by leader node id; those without a live leader (or whose topic or partition is gone) apart, with the reason. */
function groupByLeader(metadata: RawMetadata, tps: TP[]): { leaders: Map<number, TP[]>; missing: Map<string, Miss> } {
  const byName = new Map<string, RawTopicMetadata>(metadata.topicMetadata.map((t) => [t.topic, t]));
  const brokers = new Set(metadata.brokers.map((b) => b.nodeId));
  const leaders = new Map<number, TP[]>();
  const missing = new Map<string, Miss>();
  for (const tp of tps) {
    const { topic, partition } = tp;
    const t = byName.get(topic);
    const p = t?.topicErrorCode === NO_ERROR ? t.partitionMetadata.find((x) => x.partitionId === partition) : undefined;
    const k = partitionKey(topic, partition);
    if (!t || isMissingTopicCode(t.topicErrorCode)) {
      missing.set(k, { code: 'UNKNOWN_PARTITION', reason: `topic ${topic} does not exist`, retriable: false, type: UNKNOWN });
    } else if (t.topicErrorCode !== NO_ERROR) {
      const err = topicError(topic, t.topicErrorCode);
      missing.set(k, { code: 'ERROR', reason: err.message, retriable: err.retriable, type: err.type, cause: err });
    } else if (!p) {
      missing.set(k, {
        code: 'UNKNOWN_PARTITION',
        reason: `partition ${topic}/${partition} does not exist`,
        retriable: false,
        type: UNKNOWN,
      });
    } else if (p.leader < 0 || !brokers.has(p.leader)) {
      const why = p.leader < 0 ? 'no leader (election under way)' : `leader ${p.leader} is not among the live brokers`;
      missing.set(k, { code: 'NO_LEADER', reason: why, retriable: true, type: 'LEADER_NOT_AVAILABLE' });
    } else {
      leaders.set(p.leader, [...(leaders.get(p.leader) ?? []), tp]);
    }
  }
  return { leaders, missing };
}

/** topic -> partitions, in first-seen order. */
function byTopic(tps: TP[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const { topic, partition } of tps) out.set(topic, [...(out.get(topic) ?? []), partition]);
  return out;
}

export function createKafkajsMetadata(kafka: Kafka, opts: KafkajsMetadataOptions = {}): KafkajsMetadata {
  const callPolicy: RetryPolicy = {
    ...KAFKA_METADATA_RETRIES,
    ...(opts.retries !== undefined && { maxAttempts: opts.retries + 1 }),
    ...(opts.retryBackoffMs !== undefined && { initialBackoffMs: opts.retryBackoffMs }),
    ...(opts.maxRetryElapsedMs !== undefined && { maxElapsedMs: opts.maxRetryElapsedMs }),
  };
  const offsetsPolicy: RetryPolicy = { ...callPolicy, budget: 'retry-start' };
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

  /**
   * `fn` retried on retriable Kafka errors. A transient failure that already took long (a request
   * timeout waits requestTimeout, 30 s by default; kafkajs's own retrier gave up) is not retried past
   * the budget: retries could outlast the Lambda, and the next run asks again.
   */
  function withRetries<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    // Every failure, retriable or not, leaves as a KafkaError naming the call.
    return retry(fn, callPolicy, { isRetriable: isRetriableKafkaError }).catch((e: unknown) => Promise.reject(toKafkaError(operation, e)));
  }

  /**
   * Each partition's leader, from cached metadata when it is fresh and names a live leader for every
   * partition, else from one Metadata request. Partitions without a usable leader are returned apart.
   */
  async function leadersFor(tps: TP[], forceRefresh: boolean): Promise<{ leaders: Map<number, TP[]>; missing: Map<string, Miss> }> {
    const c = getCluster();
    const cached = c.cachedMetadata();
    const fresh = !forceRefresh && cached.metadata !== null && Date.now() - cached.fetchedAt < metadataMaxAgeMs;
    if (fresh) {
      const fromCache = groupByLeader(cached.metadata!, tps);
      if (fromCache.missing.size === 0) return fromCache;
    }
    return groupByLeader(await c.metadata([...new Set(tps.map((tp) => tp.topic))]), tps);
  }

  /**
   * One ListOffsets request per leader for each timestamp spec, leaders in parallel and independent:
   * a leader that fails costs only its own partitions, which are retried (metadata refreshed) until
   * the attempts or `maxRetryElapsedMs` run out, then reported with their reason. Not a retry of the
   * same call: each round asks only for the partitions still missing, and what is found is kept (a
   * partial answer is a value); its waits and limits are `offsetsPolicy`'s.
   */
  async function listOffsets(tps: TP[], timestamps: number[], isolationLevel: number): Promise<PartialOffsets> {
    const t0 = Date.now();
    const found = new Map<string, string[]>();
    const misses = new Map<string, Miss>();
    let pending = tps;
    let metadataError: unknown;
    for (let attempt = 0; ; attempt++) {
      for (const { topic, partition } of pending) misses.delete(partitionKey(topic, partition));
      try {
        const { leaders, missing } = await leadersFor(pending, attempt > 0);
        missing.forEach((miss, k) => misses.set(k, miss));
        await Promise.all([...leaders].map(([nodeId, parts]) => askLeader(nodeId, parts, timestamps, isolationLevel, found, misses)));
        metadataError = undefined;
      } catch (e) {
        // No metadata at all (every broker unreachable): nothing is known about any pending partition.
        metadataError = e;
        const reason = `no metadata: ${(e as Error)?.message ?? String(e)}`;
        const miss: Miss = { code: 'LEADER_UNREACHABLE', reason, retriable: isRetriableKafkaError(e) };
        for (const { topic, partition } of pending) misses.set(partitionKey(topic, partition), miss);
      }
      pending = pending.filter(({ topic, partition }) => misses.get(partitionKey(topic, partition))?.retriable === true);
      const delayMs = pending.length === 0 ? undefined : nextRetryDelayMs(offsetsPolicy, attempt, Date.now() - t0);
      if (delayMs === undefined) {
        if (metadataError !== undefined && found.size === 0) throw toKafkaError('fetchOffsets', metadataError);
        return { found, misses };
      }
      await systemClock.sleep(delayMs);
    }
  }

  /** One leader's ListOffsets requests (one per timestamp spec); its failure is recorded per partition, never thrown. */
  async function askLeader(
    nodeId: number,
    parts: TP[],
    timestamps: number[],
    isolationLevel: number,
    found: Map<string, string[]>,
    misses: Map<string, Miss>,
  ): Promise<void> {
    const topics = [...byTopic(parts)];
    try {
      const answers = await Promise.all(
        timestamps.map((timestamp) =>
          getCluster().listOffsets(
            nodeId,
            isolationLevel,
            topics.map(([topic, ps]) => ({ topic, partitions: ps.map((partition) => ({ partition, timestamp })) })),
          ),
        ),
      );
      const perSpec = answers.map(
        (res) => new Map(res.flatMap((t) => t.partitions.map((p) => [partitionKey(t.topic, p.partition), p.offset] as const))),
      );
      for (const { topic, partition } of parts) {
        const k = partitionKey(topic, partition);
        const values = perSpec.map((m) => m.get(k));
        if (values.every((v): v is string => v !== undefined)) found.set(k, values);
        else misses.set(k, { code: 'ERROR', reason: `the ListOffsets response of broker ${nodeId} lacks it`, retriable: true });
      }
    } catch (e) {
      const miss = classify(nodeId, e);
      for (const { topic, partition } of parts) misses.set(partitionKey(topic, partition), miss);
    }
  }

  /** The partial look-up as the port's answer; offsets checked (`check` may reject a value). */
  async function available<T>(
    tps: TP[],
    timestamps: number[],
    level: number,
    toOffsets: (tp: TP, values: string[]) => T,
  ): Promise<{ offsets: T[]; unavailable: Array<UnavailablePartition & { miss: Miss }> }> {
    const { found, misses } = await listOffsets(tps, timestamps, level);
    const offsets: T[] = [];
    const unavailable: Array<UnavailablePartition & { miss: Miss }> = [];
    for (const tp of tps) {
      const values = found.get(partitionKey(tp.topic, tp.partition));
      const miss = misses.get(partitionKey(tp.topic, tp.partition)) ?? { code: 'ERROR' as const, reason: 'no answer', retriable: true };
      if (values) offsets.push(toOffsets(tp, values));
      else unavailable.push({ ...tp, code: miss.code, reason: miss.reason, miss });
    }
    return { offsets, unavailable };
  }

  /** All-or-nothing: the first unavailable partition becomes the error. */
  function strict<T>(answer: { offsets: T[]; unavailable: Array<UnavailablePartition & { miss: Miss }> }): T[] {
    const first = answer.unavailable[0];
    if (!first) return answer.offsets;
    const more = answer.unavailable.length > 1 ? ` (and ${answer.unavailable.length - 1} more)` : '';
    throw new KafkaError(`partition ${first.topic}/${first.partition} unavailable: ${first.code}: ${first.reason}${more}`, {
      cause: first.miss.cause,
      type: first.miss.type ?? first.code,
      retriable: first.miss.retriable,
    });
  }

  /** The first offset at or after `timestampMs` per partition (latest where none), partial. */
  async function atTimestamp(
    partitions: TopicPartitions[],
    timestampMs: number,
    isolationLevel: IsolationLevel,
  ): Promise<{ offsets: TimestampOffset[]; unavailable: Array<UnavailablePartition & { miss: Miss }> }> {
    const level = isolationLevelCode(isolationLevel);
    if (!Number.isSafeInteger(timestampMs) || timestampMs < 0) {
      throw new ValidationError(`timestamp must be a non-negative integer of milliseconds, not ${timestampMs}`);
    }
    const tps = flatten(partitions);
    if (tps.length === 0) return { offsets: [], unavailable: [] };
    return available(tps, [timestampMs, LATEST_TIMESTAMP], level, ({ topic, partition }, [byTime, latest]) => {
      const what = `${topic}/${partition}`;
      const found = toSafeOffset(byTime!, `offset for timestamp ${timestampMs} of ${what}`);
      const l = toSafeOffset(latest!, `latest offset of ${what}`);
      if (l < 0) throw new KafkaError(`broker returned no latest offset for ${what}`);
      // -1: no record at or after the timestamp (below the last stable offset under read_committed).
      return { topic, partition, offset: found < 0 ? l : found };
    });
  }

  const earliestLatest = ({ topic, partition }: TP, [earliest, latest]: string[]): PartitionOffsets => {
    const what = `${topic}/${partition}`;
    const e = toSafeOffset(earliest!, `earliest offset of ${what}`);
    const l = toSafeOffset(latest!, `latest offset of ${what}`);
    if (e < 0 || l < 0) throw new KafkaError(`broker returned no offset for ${what} (earliest ${e}, latest ${l})`);
    return { topic, partition, earliest: e, latest: l };
  };

  return {
    async describeTopics(selector) {
      let names: Set<string> | undefined;
      let matcher: RegExp | undefined;
      if (selector && 'topics' in selector && Array.isArray(selector.topics)) {
        if (!selector.topics.every((t) => typeof t === 'string')) throw new ValidationError('topics must be strings');
        names = new Set(selector.topics.filter((t) => t !== '' && !isInternalTopic(t)));
        if (names.size === 0) return [];
      } else if (selector && 'pattern' in selector && selector.pattern instanceof RegExp) {
        matcher = anchoredTopicPattern(selector.pattern);
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
          if (isMissingTopicCode(t.topicErrorCode)) continue;
          if (t.topicErrorCode !== NO_ERROR) throw topicError(t.topic, t.topicErrorCode);
          // Partition-level errors (no leader, replica offline) do not make a partition disappear.
          const partitions = t.partitionMetadata.map((p) => p.partitionId).sort((a, b) => a - b);
          out.push({ topic: t.topic, partitions, ...(t.topicId ? { topicId: t.topicId } : {}) });
        }
        return out.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0));
      });
    },

    async fetchOffsets(partitions, isolationLevel) {
      const level = isolationLevelCode(isolationLevel);
      const tps = flatten(partitions);
      if (tps.length === 0) return [];
      return strict(await available(tps, [EARLIEST_TIMESTAMP, LATEST_TIMESTAMP], level, earliestLatest));
    },

    async fetchAvailableOffsets(partitions, isolationLevel): Promise<OffsetsAnswer> {
      const level = isolationLevelCode(isolationLevel);
      const tps = flatten(partitions);
      if (tps.length === 0) return { offsets: [], unavailable: [] };
      const { offsets, unavailable } = await available(tps, [EARLIEST_TIMESTAMP, LATEST_TIMESTAMP], level, earliestLatest);
      return { offsets, unavailable: unavailable.map(({ topic, partition, code, reason }) => ({ topic, partition, code, reason })) };
    },

    async fetchOffsetsForTimestamp(partitions, timestampMs, isolationLevel) {
      return strict(await atTimestamp(partitions, timestampMs, isolationLevel));
    },

    async fetchAvailableOffsetsForTimestamp(partitions, timestampMs, isolationLevel): Promise<TimestampOffsetsAnswer> {
      const { offsets, unavailable } = await atTimestamp(partitions, timestampMs, isolationLevel);
      return { offsets, unavailable: unavailable.map(({ topic, partition, code, reason }) => ({ topic, partition, code, reason })) };
    },

    async committedOffsets(group, partitions): Promise<CommittedOffset[]> {
      if (typeof group !== 'string' || group === '') throw new ValidationError(`invalid consumer group id ${JSON.stringify(group)}`);
      const tps = flatten(partitions);
      if (tps.length === 0) return [];
      const topics = [...byTopic(tps)].map(([topic, ps]) => ({ topic, partitions: ps.map((partition) => ({ partition })) }));
      const what = `reading the committed offsets of consumer group ${JSON.stringify(group)}`;
      // Retried while the coordinator moves or loads the group's offsets (retriable protocol errors).
      const answer = await withRetries(what, () => getCluster().fetchCommittedOffsets(group, topics));
      const wanted = new Set(tps.map((tp) => partitionKey(tp.topic, tp.partition)));
      return answer.flatMap((t) =>
        t.partitions.flatMap(({ partition, offset }) => {
          const committed = toSafeOffset(offset, `committed offset of ${t.topic}/${partition} in group ${group}`);
          // -1: the group has no offset for it (or the group does not exist).
          return committed >= 0 && wanted.has(partitionKey(t.topic, partition)) ? [{ topic: t.topic, partition, offset: committed }] : [];
        }),
      );
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
