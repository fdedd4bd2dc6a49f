/** Bad input for the local stack: each gives one clear message, never a stack trace or a hang. */
import { tlsFiles } from '../../../../infra/local/kafka-tls';
import { createServer, type Server } from 'node:net';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrerequisiteError } from '../../../../lib/errors';
import { ensureMoto } from '../../../../infra/local/dynamodb';
import { clusterRoles, javaBinary, minHeap, newClusterId, serverProperties } from '../../../../infra/local/kafka';
import { choosePort, LOOPBACK, requireCommand, waitUntil } from '../../../../infra/local/process';
import { kafkaDataNodes } from '../../../../infra/local/stack/kafka-dirs';
import { planUp, upReport, type Observed } from '../../../../infra/local/stack/plan-up';
import type { StackState } from '../../../../infra/local/stack/state';
import { parseUpArgs } from '../../../../infra/local/stack/up-args';

describe('local stack prerequisites', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('names a missing command and how to install it', () => {
    expect(() => requireCommand('no-such-command-xyz', ['-v'], 'install it with apt-get install xyz')).toThrow(
      /no-such-command-xyz is required but was not found: install it with apt-get install xyz/,
    );
  });

  it('names a missing Java and how to get one', () => {
    process.env.JAVA_HOME = '/nonexistent-jdk';
    expect(() => javaBinary()).toThrow(PrerequisiteError);
    expect(() => javaBinary()).toThrow(/Java 17\+ runtime .*JAVA_HOME/);
  });

  it('names a missing Python for the emulator', () => {
    process.env.PYTHON = '/nonexistent/python3';
    const cache = mkdtempSync(join(tmpdir(), 'moto-cache-'));
    expect(() => ensureMoto(cache)).toThrow(/Python 3 .*apt-get install python3/);
  });

  it('reports a requested port that is already in use', async () => {
    const srv: Server = await new Promise((resolve) => {
      const s = createServer().listen(0, LOOPBACK, () => resolve(s));
    });
    const port = (srv.address() as { port: number }).port;
    try {
      await expect(choosePort(String(port), 'LOCAL_KAFKA_PORT')).rejects.toThrow(
        new RegExp(`port ${port} \\(LOCAL_KAFKA_PORT\\) is already in use`),
      );
      await expect(choosePort('70000', 'LOCAL_KAFKA_PORT')).rejects.toThrow(/not a valid TCP port/);
    } finally {
      srv.close();
    }
  });

  it('bounds every wait', async () => {
    const t0 = Date.now();
    await expect(waitUntil('never-ready service', async () => false, { timeoutMs: 300, intervalMs: 50 })).rejects.toThrow(
      /never-ready service not ready after 300 ms/,
    );
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('never formats Kafka with a cluster id that looks like a command-line flag', () => {
    // 0xfb 0xef -> base64url "--..."; the second draw is an ordinary id.
    const draws = [Buffer.from([0xfb, 0xef, ...Array(14).fill(0)]), Buffer.alloc(16, 7)];
    const id = newClusterId(() => draws.shift() as Buffer);
    expect(id).toBe(Buffer.alloc(16, 7).toString('base64url'));
    expect(Buffer.from([0xfb, 0xef]).toString('base64url').startsWith('-')).toBe(true);
  });
});

describe('local multi-broker cluster config', () => {
  const props = (text: string): Record<string, string> =>
    Object.fromEntries(text.split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

  it('makes every node a voter of one quorum, with replication 3 and min.insync.replicas 2 by default', () => {
    const roles = clusterRoles([9101, 9102, 9103]);
    expect(roles.map((r) => r.nodeId)).toEqual([1, 2, 3]);
    const p = props(serverProperties('/d/node-2', 9002, 9102, { dir: '/d/node-2', cacheDir: '/c' }, roles[1]));
    expect(p).toMatchObject({
      'node.id': '2',
      'process.roles': 'broker,controller',
      'controller.quorum.voters': '1@127.0.0.1:9101,2@127.0.0.1:9102,3@127.0.0.1:9103',
      listeners: 'PLAINTEXT://127.0.0.1:9002,CONTROLLER://127.0.0.1:9102',
      'default.replication.factor': '3',
      'min.insync.replicas': '2',
      'offsets.topic.replication.factor': '3',
      'transaction.state.log.replication.factor': '3',
      'transaction.state.log.min.isr': '2',
      'log.dirs': '/d/node-2/data',
    });
  });

  it('keeps the single node as it was: one voter, one replica', () => {
    const p = props(serverProperties('/d', 9002, 9102, { dir: '/d', cacheDir: '/c' }));
    expect(p).toMatchObject({
      'node.id': '1',
      'controller.quorum.voters': '1@127.0.0.1:9102',
      'default.replication.factor': '1',
      'min.insync.replicas': '1',
    });
  });

  it("adds a proxied listener advertised at the proxy, beside the broker's own", () => {
    const p = props(
      serverProperties(
        '/d',
        9002,
        9102,
        { dir: '/d', cacheDir: '/c', proxied: { advertised: '127.0.0.1:7000' } },
        undefined,
        undefined,
        9003,
      ),
    );
    expect(p).toMatchObject({
      listeners: 'PLAINTEXT://127.0.0.1:9002,CONTROLLER://127.0.0.1:9102,PROXIED://127.0.0.1:9003',
      'advertised.listeners': 'PLAINTEXT://127.0.0.1:9002,PROXIED://127.0.0.1:7000',
      'inter.broker.listener.name': 'PLAINTEXT',
      'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,PROXIED:PLAINTEXT',
    });
  });

  it('makes the proxied listener of a secured broker SASL_SSL with SCRAM-SHA-512, as its secured listener', () => {
    const tls = tlsFiles('/d/tls');
    const secured = { saslSslPort: 9004, sslPort: 9005, tls };
    const opts = { dir: '/d', cacheDir: '/c', proxied: { advertised: '127.0.0.1:7000' }, secured: { scramUsers: [] } };
    const p = props(serverProperties('/d', 9002, 9102, opts, undefined, secured, 9003));
    expect(p).toMatchObject({
      'advertised.listeners': 'PLAINTEXT://127.0.0.1:9002,SASL_SSL://127.0.0.1:9004,SSL://127.0.0.1:9005,PROXIED://127.0.0.1:7000',
      'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL,PROXIED:SASL_SSL',
      'listener.name.proxied.sasl.enabled.mechanisms': 'SCRAM-SHA-512',
      'listener.name.proxied.scram-sha-512.sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required;',
      'ssl.keystore.location': tls.brokerKeyStore,
    });
  });

  it('rejects replication settings the cluster cannot hold, in one line', () => {
    expect(() => clusterRoles([1, 2], { replicationFactor: 3 })).toThrow('replication factor 3 needs 1 to 2 brokers');
    expect(() => clusterRoles([1, 2, 3], { minInsyncReplicas: 4 })).toThrow(
      /min.insync.replicas 4 must be between 1 and the replication factor 3/,
    );
    expect(() => clusterRoles([])).toThrow(/at least one node/);
    expect(clusterRoles([1]).map((r) => [r.replicationFactor, r.minInsyncReplicas])).toEqual([[1, 1]]);
  });

  it('local:up takes --brokers N, --secured (one broker) and --registry, and names anything else', () => {
    expect(parseUpArgs([])).toEqual({ kafkaNodes: 1, secured: false, registry: false });
    expect(parseUpArgs(['--brokers', '3'])).toEqual({ kafkaNodes: 3, secured: false, registry: false });
    expect(parseUpArgs(['--secured'])).toEqual({ kafkaNodes: 1, secured: true, registry: false });
    expect(parseUpArgs(['--brokers', '1', '--secured', '--registry'])).toEqual({ kafkaNodes: 1, secured: true, registry: true });
    expect(() => parseUpArgs(['--brokers', 'three'])).toThrow(
      'usage: local:up [--brokers <n>] [--secured] [--registry] with <n> from 1 to 9 (--secured: one broker), not "--brokers three"',
    );
    expect(() => parseUpArgs(['--secured', '--brokers', '3'])).toThrow(/--secured: one broker/);
    expect(() => parseUpArgs(['--nodes', '3'])).toThrow(/^unknown option '--nodes'; usage: local:up/);
  });

  it('never starts a JVM with an initial heap above its max heap', () => {
    expect(minHeap('1g')).toBe('256m');
    expect(minHeap('192m')).toBe('192m');
    expect(minHeap('384M')).toBe('256m');
    expect(() => minHeap('lots')).toThrow(/not a JVM size/);
  });
});

describe('persistent local stack after a restart', () => {
  const recorded = (over: Partial<StackState> = {}): StackState => ({
    kafkaBrokers: '127.0.0.1:9092',
    dynamodbEndpoint: 'http://127.0.0.1:8000',
    pids: [11, 22],
    kafkaPids: [11],
    dynamodbPids: [22],
    watchdogPids: [],
    dir: '/d',
    ...over,
  });
  const seen = (over: Partial<Observed> = {}): Observed => ({
    prev: recorded(),
    kafkaNodes: 1,
    kafkaUp: true,
    dynamoUp: true,
    ownPids: [11, 22],
    kafkaDataNodes: 1,
    ...over,
  });
  const report = (o: Observed, topics = 3) => upReport(planUp(o), { hadState: o.prev !== undefined, topics, kafkaNodes: o.kafkaNodes });

  it('reuses a stack whose services both answer', () => {
    expect(planUp(seen())).toEqual({ kafka: 'reuse', dynamodb: 'reuse', stopPids: [] });
    expect(report(seen())).toEqual(['local stack already running']);
  });

  it('keeps the topics when the emulator died, and says its tables are gone and nothing is applied twice', () => {
    const o = seen({ dynamoUp: false, ownPids: [11] });
    expect(planUp(o)).toEqual({ kafka: 'reuse', dynamodb: 'start', stopPids: [] });
    expect(report(o)).toEqual([
      'DynamoDB emulator had stopped: its tables (ledgers, sinks) are gone; Kafka topics kept (3 topics)',
      'streams start again from their startingOffsets (the ledger is new); their sink tables were on the emulator too, ' +
        'so no record is applied twice into a kept sink',
    ]);
    expect(report(o, 0)).toEqual(['DynamoDB emulator had stopped: its tables (ledgers, sinks) are gone; Kafka topics kept (0 topics)']);
  });

  it('restarts a dead broker on its data dir without touching the emulator', () => {
    const o = seen({ kafkaUp: false, ownPids: [22] });
    expect(planUp(o)).toEqual({ kafka: 'restart', dynamodb: 'reuse', stopPids: [] });
    expect(report(o, 1)).toEqual([
      'Kafka broker had stopped: restarted on its data dir and ports; Kafka topics kept (1 topic); DynamoDB tables kept',
    ]);
  });

  it('after local:down restarts Kafka on its data and says the tables from before are gone', () => {
    const o = seen({ prev: undefined, kafkaUp: false, dynamoUp: false });
    expect(planUp(o)).toEqual({ kafka: 'restart', dynamodb: 'start', stopPids: [] });
    expect(report(o, 2)[0]).toBe(
      'DynamoDB emulator keeps its tables in memory: those from before local:down (ledgers, sinks) are gone; ' +
        'Kafka topics kept (2 topics, Kafka broker restarted on its data dir)',
    );
  });

  it('starts a first stack fresh without a word about losses', () => {
    const o = seen({ prev: undefined, kafkaUp: false, dynamoUp: false, kafkaDataNodes: 0 });
    expect(planUp(o)).toEqual({ kafka: 'fresh', dynamodb: 'start', stopPids: [] });
    expect(report(o, 0)).toEqual([]);
  });

  it('says when the broker had lost its data dir while the ledgers survived', () => {
    const o = seen({ kafkaUp: false, kafkaDataNodes: 0 });
    expect(planUp(o).kafka).toBe('fresh');
    expect(report(o, 0)).toEqual([
      'Kafka broker had stopped and its data dir is gone: a fresh one has no topics; DynamoDB tables kept, ' +
        'but their ledgers name topics that are gone (npm run local:reset starts both fresh)',
    ]);
  });

  it('starts fresh, saying so, when the number of Kafka nodes changes', () => {
    const o = seen({ kafkaNodes: 3, kafkaUp: false });
    expect(planUp(o)).toEqual({
      kafka: 'fresh',
      dynamodb: 'start',
      stopPids: [11, 22],
      wipeReason: 'the local stack has 1 Kafka node, not 3',
    });
    expect(report(o)).toEqual([
      'the local stack has 1 Kafka node, not 3: starting a fresh stack; its Kafka data and DynamoDB tables are gone',
    ]);
    expect(planUp(seen({ prev: undefined, kafkaNodes: 1, kafkaDataNodes: 3 })).wipeReason).toBe('the local stack has 3 Kafka nodes, not 1');
  });

  it('restarts a 3-node cluster on its data when one node died', () => {
    const prev = recorded({ kafkaBrokers: 'a:1,b:2,c:3', kafkaPids: [1, 2, 3], pids: [1, 2, 3, 22] });
    // Node 1 died: the two live nodes are stopped so that all three restart together.
    const o = seen({ prev, kafkaNodes: 3, kafkaUp: false, kafkaDataNodes: 3, ownPids: [2, 3, 22] });
    expect(planUp(o)).toEqual({ kafka: 'restart', dynamodb: 'reuse', stopPids: [2, 3] });
    expect(report(o, 2)[0]).toMatch(/^Kafka cluster had stopped: restarted on its data dir/);
  });

  it('stops every recorded process of a state that does not say which is which, keeping the Kafka data', () => {
    const prev = recorded({ kafkaPids: undefined, dynamodbPids: undefined });
    expect(planUp(seen({ prev, dynamoUp: false }))).toEqual({ kafka: 'restart', dynamodb: 'start', stopPids: [11, 22] });
    expect(planUp(seen({ prev, dynamoUp: false, ownPids: [11] }))).toEqual({ kafka: 'restart', dynamodb: 'start', stopPids: [11] });
    expect(planUp(seen({ prev }))).toEqual({ kafka: 'reuse', dynamodb: 'reuse', stopPids: [] });
  });

  it("never stops a recorded pid that is no longer the stack's own process (a reused pid)", () => {
    const o = seen({ kafkaUp: false, dynamoUp: false, ownPids: [] });
    expect(planUp(o)).toEqual({ kafka: 'restart', dynamodb: 'start', stopPids: [] });
    expect(planUp(seen({ kafkaNodes: 3, kafkaUp: false, ownPids: [] })).stopPids).toEqual([]);
  });

  it('names a new endpoint when the old port was taken', () => {
    const lines = upReport(planUp(seen({ dynamoUp: false })), {
      hadState: true,
      topics: 0,
      kafkaNodes: 1,
      movedTo: { dynamodbEndpoint: 'http://127.0.0.1:9999' },
    });
    expect(lines.at(-1)).toBe('DYNAMODB_ENDPOINT is now http://127.0.0.1:9999 (a new port: export it again)');
  });

  it('counts formatted Kafka node dirs', () => {
    const root = mkdtempSync(join(tmpdir(), 'kafka-data-'));
    const format = (d: string): void => {
      mkdirSync(join(d, 'data'), { recursive: true });
      writeFileSync(join(d, 'server.properties'), '');
      writeFileSync(join(d, 'data', 'meta.properties'), '');
    };
    expect(kafkaDataNodes(join(root, 'none'))).toBe(0);
    format(join(root, 'single'));
    expect(kafkaDataNodes(join(root, 'single'))).toBe(1);
    for (const n of [1, 2, 3]) format(join(root, 'cluster', `node-${n}`));
    expect(kafkaDataNodes(join(root, 'cluster'))).toBe(3);
    mkdirSync(join(root, 'unformatted'));
    writeFileSync(join(root, 'unformatted', 'server.properties'), '');
    expect(kafkaDataNodes(join(root, 'unformatted'))).toBe(0);
  });
});
