/**
 * The persistent local stack across deaths and restarts, on a stack of its own in a temp dir (never
 * the one `npm start` uses): a killed broker comes back on its data, a killed emulator comes back
 * empty and the next `up` says so, `down` keeps Kafka's data and `reset` deletes it.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { Kafka, logLevel } from 'kafkajs';
import { emulatorClient } from '../../infra/local/dynamodb';
import { isAlive, killProcess, LOOPBACK, waitUntil } from '../../infra/local/process';
import { kafkaDataNodes } from '../../infra/local/stack/kafka-dirs';
import { downPersistent, upPersistent } from '../../infra/local/stack/persistent';
import type { PersistentPlace, StackState } from '../../infra/local/stack/state';
import { createSinkTable } from '../../lib/sink/table.dynamodb';
import { createTopicsReady, uniqueName } from '../support/env';

jest.setTimeout(300_000);

describe('persistent local stack', () => {
  let place: PersistentPlace;
  let lines: string[];
  const log = (line: string): void => void lines.push(line);
  const topic = uniqueName('kept');
  const table = uniqueName('lost');
  const values = ['a', 'b', 'c', 'd', 'e'];
  // Its own ports: the shared stack's LOCAL_* variables, if any, are not this stack's.
  const up = async (): Promise<StackState> => {
    lines = [];
    return upPersistent(log, { place, env: {} });
  };
  const down = async (wipe = false): Promise<void> => {
    lines = [];
    await downPersistent(log, { place, wipe });
  };

  beforeAll(() => {
    const dir = mkdtempSync(join(tmpdir(), 'local-persistent-'));
    place = { dir, stateFile: join(dir, 'state.json'), ownerPid: process.pid };
  });
  afterAll(async () => {
    await downPersistent(() => undefined, { place, wipe: true });
    rmSync(place.dir, { recursive: true, force: true });
  });

  const kafka = (s: StackState): Kafka =>
    new Kafka({ clientId: 'local-persistent-test', brokers: s.kafkaBrokers.split(','), logLevel: logLevel.NOTHING });

  /** Every record of the topic, read from the beginning without a consumer group. */
  async function readAll(s: StackState): Promise<string[]> {
    const admin = kafka(s).admin();
    await admin.connect();
    try {
      let high = 0;
      // A restarted broker may take a moment to lead its partitions again.
      await waitUntil(
        `topic ${topic} readable`,
        async () => {
          high = Number((await admin.fetchTopicOffsets(topic))[0]?.high ?? 0);
          return true;
        },
        { timeoutMs: 30_000 },
      );
      if (high === 0) return [];
      const consumer = kafka(s).consumer({ groupId: uniqueName('local-persistent') });
      await consumer.connect();
      const got: string[] = [];
      try {
        await consumer.subscribe({ topic, fromBeginning: true });
        await new Promise<void>((resolve, reject) => {
          consumer
            .run({
              eachMessage: async ({ message }) => {
                got.push(String(message.value));
                if (got.length >= high) resolve();
              },
            })
            .catch(reject);
        });
      } finally {
        await consumer.disconnect();
      }
      return got;
    } finally {
      await admin.disconnect();
    }
  }

  async function tables(s: StackState): Promise<string[]> {
    const ddb = emulatorClient(s.dynamodbEndpoint);
    try {
      return (await ddb.send(new ListTablesCommand({}))).TableNames ?? [];
    } finally {
      ddb.destroy();
    }
  }

  let first: StackState;

  it('starts fresh the first time, and a topic with records and a table go on it', async () => {
    first = await up();
    // Nothing lost to report: only the start times, what Kafka keeps on disk and where the logs are.
    expect(lines.filter((l) => !/ started in \d+ ms/.test(l))).toEqual([
      expect.stringMatching(/^Kafka data: [\d.]+ KB in 0 partitions \(.*kafka\)$/),
      expect.stringMatching(/^logs: .*kafka\/server\.log, .*dynamodb\/moto\.log \(rotated at 5 MB, 3 kept\)$/),
    ]);
    const admin = kafka(first).admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic }]);
    await admin.disconnect();
    const producer = kafka(first).producer();
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: values.map((value) => ({ value })) });
    await producer.disconnect();
    const ddb = emulatorClient(first.dynamodbEndpoint);
    await createSinkTable(ddb, table);
    ddb.destroy();
  });

  it('restarts a killed broker on its data and port, keeping the emulator and its tables', async () => {
    const [kafkaPid] = first.kafkaPids ?? [];
    await killProcess(kafkaPid as number);
    const s = await up();
    expect(lines).toContain(
      'Kafka broker had stopped: restarted on its data dir and ports; Kafka topics kept (1 topic); DynamoDB tables kept',
    );
    expect(s.kafkaBrokers).toBe(first.kafkaBrokers);
    expect(s.dynamodbPids).toEqual(first.dynamodbPids);
    expect(await readAll(s)).toEqual(values);
    expect(await tables(s)).toContain(table);
  });

  it('says the tables are gone when the emulator died, and keeps the topic and its records', async () => {
    const before = await up();
    expect(lines[0]).toBe('local stack already running');
    await killProcess((before.dynamodbPids ?? [])[0] as number);
    const s = await up();
    expect(lines).toContain('DynamoDB emulator had stopped: its tables (ledgers, sinks) are gone; Kafka topics kept (1 topic)');
    expect(lines.some((l) => l.startsWith('streams start again from their startingOffsets (the ledger is new)'))).toBe(true);
    expect(s.dynamodbEndpoint).toBe(first.dynamodbEndpoint);
    expect(s.kafkaPids).toEqual(before.kafkaPids);
    expect(await tables(s)).not.toContain(table);
    expect(await readAll(s)).toEqual(values);
  });

  it('local:down stops everything and keeps the Kafka data for the next local:up', async () => {
    const s = await up();
    await down();
    expect(s.pids.filter(isAlive)).toEqual([]);
    expect(
      lines.some((l) =>
        l.startsWith(`Kafka data kept in ${join(place.dir, 'kafka')} for the next local up (npm run local:reset deletes it)`),
      ),
    ).toBe(true);
    const again = await up();
    expect(lines).toContain(
      'DynamoDB emulator keeps its tables in memory: those from before local:down (ledgers, sinks) are gone; ' +
        'Kafka topics kept (1 topic, Kafka broker restarted on its data dir)',
    );
    expect(await readAll(again)).toEqual(values);
  });

  it('names the taken port instead of starting a fresh broker, and keeps the data', async () => {
    const s = await up();
    await down();
    const port = Number(s.kafkaBrokers.split(':').at(-1));
    const squatter: Server = await new Promise((resolve) => {
      const srv = createServer().listen(port, LOOPBACK, () => resolve(srv));
    });
    try {
      await expect(up()).rejects.toThrow(
        new RegExp(
          `^Kafka's client port ${port} \\(recorded in .*\\) is taken by pid ${process.pid} \\(.*\\): cannot restart the broker on its data; ` +
            'npm run local:reset deletes the Kafka data and starts fresh$',
        ),
      );
    } finally {
      squatter.close();
    }
    expect(kafkaDataNodes(join(place.dir, 'kafka'))).toBe(1);
    expect(existsSync(place.stateFile)).toBe(false);
  });

  it('local:reset deletes the data: the next local:up starts an empty broker', async () => {
    await down(true);
    expect(existsSync(place.dir)).toBe(false);
    const s = await up();
    const admin = kafka(s).admin();
    await admin.connect();
    expect(await admin.listTopics()).not.toContain(topic);
    await admin.disconnect();
  });
});
