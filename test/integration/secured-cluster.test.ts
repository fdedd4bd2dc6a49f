/**
 * Every path over a secured broker, as on plaintext: the test run's broker accepts SASL/SCRAM-SHA-512
 * over TLS and mutual TLS besides PLAINTEXT (see infra/local/kafka-tls.ts). For each mechanism:
 * planner discovery and offsets, the range reader over a multi-batch range with headers and an
 * aborted transaction (compared record by record with the same read over plaintext), an exactly-once
 * drain with consumer-group commits, and the CLI's status, peek and rewind.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseStreamConfig, type KafkaConnectionConfig } from '../../lib/config/schema';
import { runCli } from '../../lib/cli/program';
import { createKafka } from '../../lib/kafka/client';
import { createKafkajsMetadata } from '../../lib/kafka/metadata.kafkajs';
import { createKafkajsRangeReader } from '../../lib/kafka/range-reader.kafkajs';
import { runConfigFile } from '../../lib/local/run-config';
import type { KafkaRecord } from '../../lib/ports/range-reader';
import { scanSinkItems } from '../../lib/sink/table.dynamodb';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';
import { exportSecrets, mechanisms, securedBroker } from '../support/secured';
import { waitFor } from '../support/wait-for';

const broker = securedBroker();
exportSecrets(broker);
const plainKafka = testKafka('secured-test');
const admin = plainKafka.admin();
const ddb = testDynamo();
const dir = mkdtempSync(join(tmpdir(), 'secured-'));
const topic = uniqueName('secured');
/** Per account, the amounts of the records a read_committed reader sees. */
const committedTotals: Record<string, number> = {};

/** Three batches with headers, a committed transaction and an aborted one, on 2 partitions. */
async function produce(): Promise<void> {
  await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
  const producer = plainKafka.producer({ allowAutoTopicCreation: false });
  const tx = plainKafka.producer({ transactionalId: uniqueName('secured-tx'), idempotent: true, maxInFlightRequests: 1 });
  await Promise.all([producer.connect(), tx.connect()]);
  const records = (batch: number) =>
    Array.from({ length: 30 }, (_, i) => ({
      key: `acct-${i % 6}`,
      value: JSON.stringify({ amount: batch * 100 + i }),
      partition: i % 2,
      headers: { trace: [`b${batch}`, `i${i}`], empty: '' },
    }));
  const count = (rs: ReturnType<typeof records>) => {
    for (const r of rs) committedTotals[r.key] = (committedTotals[r.key] ?? 0) + (JSON.parse(r.value) as { amount: number }).amount;
  };
  for (const batch of [1, 2, 3]) {
    const rs = records(batch);
    await producer.send({ topic, messages: rs });
    count(rs);
  }
  const committed = await tx.transaction();
  await committed.send({ topic, messages: records(4) });
  await committed.commit();
  count(records(4));
  const aborted = await tx.transaction();
  await aborted.send({ topic, messages: records(5) });
  await aborted.abort();
  await Promise.all([producer.disconnect(), tx.disconnect()]);
}

/**
 * Group commits are best effort (a drain does not wait for them), and a fresh broker's group
 * coordinator answers COORDINATOR_LOAD_IN_PROGRESS for a while: wait until it serves offset fetches.
 */
async function groupCoordinatorReady(): Promise<void> {
  const serves = async () => {
    await admin.fetchOffsets({ groupId: uniqueName('probe'), topics: [topic] });
    return true;
  };
  await waitFor('the group coordinator to serve offset fetches', serves, { timeoutMs: 30_000, intervalMs: 200 });
}

/** A topic whose ~1.4 MB fits one Fetch response: many TLS records, two batches. */
const bigTopic = uniqueName('secured-big');
const bigValues = Array.from({ length: 140 }, (_, i) => Buffer.alloc(10_000, i));

async function produceBig(): Promise<void> {
  await createTopicsReady(admin, [{ topic: bigTopic, numPartitions: 1 }]);
  const producer = plainKafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  // Batches under the broker's 1 MB message limit.
  for (const part of [bigValues.slice(0, 70), bigValues.slice(70)])
    await producer.send({ topic: bigTopic, messages: part.map((value) => ({ value })) });
  await producer.disconnect();
}

beforeAll(async () => {
  await admin.connect();
  await Promise.all([produce(), produceBig()]);
  await groupCoordinatorReady();
}, 60_000);
afterAll(async () => {
  await admin.disconnect();
  ddb.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const connection = (brokers: string, kafka: Record<string, unknown>): KafkaConnectionConfig =>
  parseStreamConfig({ id: 's', kafka: { ...kafka, brokers: [brokers] }, topics: [topic] }, 'secured test').kafka;
const plaintext = () => connection(process.env.KAFKA_BROKERS!.split(',')[0]!, {});

/** Every record of the topic's partitions, read_committed, as comparable values (bytes as base64). */
async function readAll(cfg: KafkaConnectionConfig): Promise<{ records: unknown[]; fetches: number }> {
  const kafka = await createKafka(cfg);
  const metadata = createKafkajsMetadata(kafka);
  const reader = createKafkajsRangeReader(await createKafka(cfg));
  try {
    const offsets = await metadata.fetchOffsets(await metadata.describeTopics({ topics: [topic] }), 'read_committed');
    const records: unknown[] = [];
    for (const o of offsets) {
      const req = { topic, partition: o.partition, from: o.earliest, until: o.latest, isolationLevel: 'read_committed' as const };
      // Small fetches, so the range takes several Fetch requests over the secured connection.
      for await (const chunk of reader.read({ ...req, maxFetchBytes: 1024, maxChunkRecords: 7 }))
        records.push(...chunk.records.map(comparable));
    }
    return { records, fetches: reader.requestCount() };
  } finally {
    await Promise.all([metadata.close(), reader.close()]);
  }
}

const b64 = (b: Buffer | null) => (b === null ? null : b.toString('base64'));
function comparable(r: KafkaRecord) {
  return {
    partition: r.partition,
    offset: r.offset,
    timestampMs: r.timestampMs,
    key: b64(r.key),
    value: b64(r.value),
    headers: r.headers.map((h) => [h.key, b64(h.value)]),
  };
}

function configFile(m: { kafka: Record<string, unknown> }, ids: { ledger: string; sink: string; group: string }): string {
  const file = join(dir, `${uniqueName('streams')}.json`);
  const stream = {
    id: 'sec',
    kafka: { brokers: ['deployed.example.com:9096'], ...m.kafka },
    topics: [topic],
    triggerIntervalMs: 1000,
    processor: { timeoutMs: 30_000 },
    consumerGroup: ids.group,
    handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: { name: ids.sink, key: { partitionKey: 'pk' } } },
  };
  writeFileSync(file, JSON.stringify({ ledgerTable: ids.ledger, streams: [stream] }));
  return file;
}

async function cli(argv: string[], brokers: string): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const env = { ...process.env, KAFKA_BROKERS: brokers };
  const code = await runCli(argv, { out: (s) => (out += s), err: (s) => (err += s) }, { env });
  return { code, out, err };
}

describe.each(mechanisms(broker))('over $name', (m) => {
  it('reads exactly the records plaintext reads: bytes, headers, offsets, the aborted transaction skipped', async () => {
    const [secured, plain] = await Promise.all([readAll(connection(m.brokers, m.kafka)), readAll(plaintext())]);
    expect(plain.records).toHaveLength(120);
    expect(secured.records).toEqual(plain.records);
    expect(secured.fetches).toBeGreaterThan(4);
  });

  it('reads a Fetch response of many TLS records in one piece, byte-exact', async () => {
    const reader = createKafkajsRangeReader(await createKafka(connection(m.brokers, m.kafka)));
    try {
      const chunks: KafkaRecord[][] = [];
      const req = { topic: bigTopic, partition: 0, from: 0, until: bigValues.length, isolationLevel: 'read_uncommitted' as const };
      for await (const chunk of reader.read({ ...req, maxFetchBytes: 4 << 20, maxChunkRecords: 500 })) chunks.push(chunk.records);
      const records = chunks.flat();
      expect(reader.requestCount()).toBe(1);
      expect(records.map((r) => r.offset)).toEqual(bigValues.map((_, i) => i));
      expect(records.filter((r, i) => !r.value?.equals(bigValues[i]!)).map((r) => r.offset)).toEqual([]);
    } finally {
      await reader.close();
    }
  });

  it('discovers partitions and reads offsets as plaintext does', async () => {
    const look = async (cfg: KafkaConnectionConfig) => {
      const md = createKafkajsMetadata(await createKafka(cfg));
      try {
        const parts = await md.describeTopics({ topics: [topic] });
        return { parts, offsets: await md.fetchOffsets(parts, 'read_committed') };
      } finally {
        await md.close();
      }
    };
    expect(await look(connection(m.brokers, m.kafka))).toEqual(await look(plaintext()));
  });

  it('drains exactly once into the sink, commits the consumer group, and operates with status, peek and rewind', async () => {
    const ids = { ledger: uniqueName('sec-ledger'), sink: uniqueName('sec-sink'), group: uniqueName('sec-group') };
    const file = configFile(m, ids);
    let err = '';
    const out = '';
    const res = await runConfigFile(
      { configFile: file, untilCaughtUp: true, json: true, progress: 'off', timeoutMs: 60_000, maxConcurrency: 4 },
      {
        kafkaBrokers: m.brokers,
        dynamodbEndpoint: process.env.DYNAMODB_ENDPOINT!,
        env: process.env,
        out: () => undefined,
        err: (s) => (err += s),
      },
    );
    if (res.exitCode !== 0) throw new Error(`the drain exited ${res.exitCode}:\n${out}${err}`);
    const totals = Object.fromEntries((await scanSinkItems(ddb, ids.sink, 100)).map((i) => [i.pk, i.total]));
    expect(totals).toEqual(committedTotals);
    const group = await admin.fetchOffsets({ groupId: ids.group, topics: [topic] });
    const latest = await admin.fetchTopicOffsets(topic);
    expect(group[0]!.partitions.map((p) => [p.partition, p.offset]).sort()).toEqual(latest.map((p) => [p.partition, p.high]).sort());

    const status = await cli(['--config', file, 'status', 'sec', '--json'], m.brokers);
    expect(status).toMatchObject({ code: 0 });
    const s = JSON.parse(status.out) as { partitions: Array<{ partition: number; committed: number; latest: number; lag: number }> };
    expect(s.partitions.map((p) => [p.partition, p.committed, p.lag]).sort()).toEqual(
      latest.map((p) => [p.partition, Number(p.high), 0]).sort(),
    );
    const [securedPeek, plainPeek] = await Promise.all([
      cli(['--config', file, 'peek', topic, '0', '0', '--count', '20', '--json'], m.brokers),
      cli(['--config', configFile({ kafka: {} }, ids), 'peek', topic, '0', '0', '--count', '20', '--json'], process.env.KAFKA_BROKERS!),
    ]);
    expect(securedPeek.code).toBe(0);
    expect(securedPeek.out.trim().split('\n')).toHaveLength(20);
    expect(securedPeek.out).toBe(plainPeek.out);
    const rewind = await cli(['--config', file, 'rewind', 'sec', '--to', 'earliest', '--dry-run', '--json'], m.brokers);
    expect(rewind).toMatchObject({ code: 0 });
    expect(JSON.stringify(JSON.parse(rewind.out))).toContain('"dryRun":true');
  }, 120_000);
});
