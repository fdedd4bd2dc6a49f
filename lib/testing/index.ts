/**
 * The handler test kit (`kafka-lambda-direct/testing`): runs a handler over given records through
 * the real planner and processor path (the local runtime's planner and processRange, chunking,
 * retries, dead letters and commits) on the in-memory ledger, Kafka metadata and range reader, and
 * returns what the sink would hold, the dead letters and each partition's committed offset.
 * `runHandlerOnTopic` does the same over a real topic (the local stack's), read by the processor's
 * own range reader.
 */
import { parseStreamConfig, type StreamConfig, type StreamConfigInput, type TriggerFunctionConfig } from '../config/schema';
import { topicSelector } from '../config/topics';
import { ValidationError } from '../errors';
import { handlerFromExports, loadHandlerModule, loadModuleExports } from '../handlers/modules';
import { triggerFunctionFromExports, triggerHandlerFor, type TriggerFunction } from '../handlers/trigger-function';
import { createKafka, quietKafkaLog } from '../kafka/client';
import { createKafkajsMetadata } from '../kafka/metadata.kafkajs';
import { createMemoryKafka } from '../kafka/metadata.memory';
import { createKafkajsRangeReader } from '../kafka/range-reader.kafkajs';
import { createMemoryRangeReader } from '../kafka/range-reader.memory';
import { createMemoryLedger } from '../ledger/ledger.memory';
import { createLocalRunner } from '../runtime/local';
import type { DeadLetter } from '../ports/ledger-state';
import type { SinkWrite } from '../ports/sink-write';
import type { KafkaMetadata } from '../ports/kafka-metadata';
import type { RangeReader, RecordHeader } from '../ports/range-reader';
import type { FoldingHandler, RecordsHandler } from '../processor/handler-api';
import { withCheckedFold } from './checked-fold';
import { applySinkWrites, type SinkItem } from './sink.memory';

export { applySinkWrites, type SinkItem } from './sink.memory';
export type { AtLeastOnceHandler, ExactlyOnceHandler, HandlerContext, HandlerRecord, RecordsHandler } from '../processor/handler-api';
export type { SinkWrite } from '../ports/sink-write';
export type { TriggerFunction } from '../handlers/trigger-function';

/** A record to feed the handler: an object value is written as its JSON text. */
export type TestRecord = {
  key?: string | null;
  value: string | Record<string, unknown> | unknown[] | number | boolean | null;
  /** Default 0. */
  partition?: number;
  headers?: RecordHeader[];
};

export type RunHandlerOptions = {
  /** Topic name the records are in (default `test-topic`). */
  topic?: string;
  /** Stream settings to apply (e.g. `maxAttempts`, `poisonPolicy`, `maxRatePerPartition`). */
  stream?: Partial<StreamConfigInput>;
  /** Records per handler call (default: the processor's 500). */
  maxChunkRecords?: number;
  /**
   * Key attributes of the sink table: items are told apart by them, and a fold.map key without
   * exactly them fails the run (default: the writes' key attributes).
   */
  sinkKey?: string[];
  /** The handler's `ctx.secrets` (default none): test values instead of the secret stores. */
  secrets?: Record<string, string>;
};

export type RunHandlerResult = {
  /** The sink table's items after applying every committed write (exactly-once handlers). */
  sinkItems: SinkItem[];
  /** The committed sink writes, in commit order. */
  sinkWrites: SinkWrite[];
  deadLetters: DeadLetter[];
  /** Per partition: the committed offset (all records below it were handled or dead-lettered). */
  progress: Array<{ topic: string; partition: number; committed: number; latest: number }>;
  /** Processor invocations the run took. */
  invocations: number;
};

const STREAM_ID = 'test';

/**
 * Runs `handler` (a handler object, or the path of a handler module) over `records` until every
 * partition is committed to its end, planning and processing as the deployed functions do.
 */
export async function runHandler<V = unknown>(
  handler: RecordsHandler | FoldingHandler<V> | string,
  records: TestRecord[],
  options: RunHandlerOptions = {},
): Promise<RunHandlerResult> {
  const topic = options.topic ?? 'test-topic';
  const h = handlerOf(handler);
  const stream = testStream(h, topic, options.stream);
  const kafka = createMemoryKafka();
  const reader = createMemoryRangeReader();
  const partitions = Math.max(1, ...records.map((r) => (r.partition ?? 0) + 1));
  kafka.createTopic(topic, partitions);
  for (const r of records) {
    const value = r.value === null ? null : typeof r.value === 'string' ? r.value : JSON.stringify(r.value);
    reader.append(topic, r.partition ?? 0, [{ key: r.key ?? undefined, value, headers: r.headers }]);
    kafka.produce(topic, r.partition ?? 0, 1);
  }
  return drive(h, stream, {
    metadata: kafka,
    createReader: async () => reader,
    maxChunkRecords: options.maxChunkRecords,
    sinkKey: options.sinkKey,
    secrets: options.secrets,
  });
}

export type RunHandlerOnTopicOptions = Omit<RunHandlerOptions, 'topic'> & {
  /** Brokers of the cluster (default: KAFKA_BROKERS). */
  brokers?: string[];
};

/**
 * Runs `handler` over every record a real topic holds now (e.g. on the local stack), read with the
 * processor's own range reader, still on the in-memory ledger and sink: nothing is written to DynamoDB.
 */
export async function runHandlerOnTopic<V = unknown>(
  handler: RecordsHandler | FoldingHandler<V> | string,
  topic: string,
  options: RunHandlerOnTopicOptions = {},
): Promise<RunHandlerResult> {
  const brokers = options.brokers ?? process.env.KAFKA_BROKERS?.split(',');
  if (!brokers?.length) throw new ValidationError('runHandlerOnTopic needs brokers: pass { brokers } or set KAFKA_BROKERS');
  const h = handlerOf(handler);
  const stream = testStream(h, topic, { ...options.stream, kafka: { brokers } });
  const metadata = createKafkajsMetadata(await createKafka(stream.kafka, { log: quietKafkaLog, streams: [stream.id] }));
  try {
    return await drive(h, stream, {
      metadata,
      createReader: async () => createKafkajsRangeReader(await createKafka(stream.kafka, { log: quietKafkaLog, streams: [stream.id] })),
      maxChunkRecords: options.maxChunkRecords,
      sinkKey: options.sinkKey,
      secrets: options.secrets,
    });
  } finally {
    await metadata.close();
  }
}

/** How the test kit calls a trigger function: `handler.triggerFunction`'s settings, and the brokers its events name. */
export type TriggerFunctionOptions = Partial<Pick<TriggerFunctionConfig, 'export' | 'eventSource' | 'eventSourceArn' | 'batchSize'>> & {
  /** The event's `bootstrapServers` (default: KAFKA_BROKERS, else localhost:9092). */
  brokers?: string[];
};

/**
 * A function written for Lambda's Kafka trigger (the function, or the path of its module) as the
 * at-least-once handler the processor makes of it with `handler.triggerFunction`: give it to
 * `runHandler` or `runHandlerOnTopic`. Settings are checked as the streams config checks them.
 */
export function triggerFunction(fn: TriggerFunction | string, options: TriggerFunctionOptions = {}): RecordsHandler {
  const { brokers = process.env.KAFKA_BROKERS?.split(',') ?? ['localhost:9092'], ...settings } = options;
  const module = typeof fn === 'string' ? fn : './trigger-function.js';
  const stream = parseStreamConfig(
    { id: STREAM_ID, kafka: { brokers }, topics: ['t'], handler: { module, mode: 'at-least-once', triggerFunction: settings } },
    'the test kit',
  );
  const exportName = (stream.handler?.triggerFunction as TriggerFunctionConfig).export;
  const where = typeof fn === 'string' ? `the trigger function module ${fn}` : 'the trigger function given to the test kit';
  const f =
    typeof fn === 'string' ? triggerFunctionFromExports(loadModuleExports(STREAM_ID, fn, process.cwd()).exports, exportName, where) : fn;
  return triggerHandlerFor(stream, f, where);
}

/**
 * The handler as the processor gets it: a module loaded by path, an object checked (and a fold
 * given its `handle`) as a module export is.
 */
function handlerOf<V>(handler: RecordsHandler | FoldingHandler<V> | string): RecordsHandler {
  if (typeof handler === 'string') return loadHandlerModule(STREAM_ID, handler, process.cwd());
  return handlerFromExports({ default: handler }, 'the handler given to the test kit');
}

/** Plans and processes the stream until every partition is committed to the offsets it had at the start. */
async function drive(
  h: RecordsHandler,
  stream: StreamConfig,
  deps: {
    metadata: KafkaMetadata;
    createReader: () => Promise<RangeReader>;
    maxChunkRecords?: number;
    sinkKey?: string[];
    secrets?: Record<string, string>;
  },
): Promise<RunHandlerResult> {
  const ledger = createMemoryLedger();
  const checked = withCheckedFold(h, stream.handler?.sinkTable ?? '', deps.sinkKey);
  const runner = createLocalRunner(
    {
      ledger,
      metadataFor: async () => deps.metadata,
      createReader: deps.createReader,
      handlerFor: () => checked.handler,
      secretsFor: async () => Object.freeze({ ...deps.secrets }),
      maxChunkRecords: deps.maxChunkRecords,
    },
    [stream],
  );
  const latest = await deps.metadata.fetchOffsets(await deps.metadata.describeTopics(topicSelector(stream)), stream.isolationLevel);
  const done = async () => {
    const parts = await ledger.readPartitions(STREAM_ID);
    return latest.every((o) => parts.some((p) => p.topic === o.topic && p.partition === o.partition && p.committed >= o.latest));
  };
  try {
    // Each planner run plans at most one range per partition; a bounded stream needs several.
    for (let run = 0; run < 10_000 && !(await done()); run++) {
      await runner.planOnce();
      await runner.idle();
      const problem = checked.problem();
      if (problem) throw new ValidationError(`the handler's ${problem}`);
      const stuck = (await ledger.readOpenRanges(STREAM_ID)).find((r) => r.status === 'parked');
      if (stuck)
        throw new ValidationError(`range ${stuck.topic}/${stuck.partition} [${stuck.from}, ${stuck.until}) parked: ${stuck.lastError}`);
    }
  } finally {
    await runner.stop();
  }
  const sinkWrites = ledger.store(STREAM_ID).sinkWrites;
  const parts = await ledger.readPartitions(STREAM_ID);
  return {
    sinkItems: h.mode === 'dynamodb-exactly-once' ? applySinkWrites(sinkWrites, deps.sinkKey) : [],
    sinkWrites,
    deadLetters: await ledger.listDeadLetters(STREAM_ID),
    progress: latest.map((o) => ({
      topic: o.topic,
      partition: o.partition,
      committed: parts.find((p) => p.topic === o.topic && p.partition === o.partition)?.committed ?? 0,
      latest: o.latest,
    })),
    invocations: runner.stats().invocations,
  };
}

function testStream(h: RecordsHandler, topic: string, extra: Partial<StreamConfigInput> = {}): StreamConfig {
  return parseStreamConfig(
    {
      id: STREAM_ID,
      kafka: { brokers: ['memory:9092'] },
      topics: [topic],
      triggerIntervalMs: 1000,
      processor: { timeoutMs: 60_000 },
      handler: { module: 'test', mode: h.mode, ...(h.mode === 'dynamodb-exactly-once' ? { sinkTable: 'test-sink' } : {}) },
      ...extra,
    },
    'runHandler',
  );
}
