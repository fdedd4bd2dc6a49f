/**
 * The network scenarios' stack: a private broker the streams reach only through a Toxiproxy proxy,
 * over SASL_SSL with SCRAM as on a managed cluster (its proxied listener advertises the proxy's
 * address, so every connection a client opens after bootstrap goes through it too), and the DynamoDB
 * emulator through another. The system's clients are
 * the functions' own (`createKafka`, `dynamoClientFromEnv`: their timeouts are what is under test);
 * set-up and checks go around the proxies. What the clients met is counted as it happens.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Kafka, logLevel } from 'kafkajs';
import { startKafka, stopKafka, type KafkaInstance } from '../../infra/local/kafka';
import { freePort } from '../../infra/local/process';
import { CACHE_DIR } from '../../infra/local/stack/dirs';
import { parseStreamConfig, type KafkaConnectionConfig } from '../../lib/config/schema';
import { createKafka, type KafkaLogFn } from '../../lib/kafka/client';
import { createMetadataCache } from '../../lib/kafka/metadata-cache';
import { createKafkajsMetadata } from '../../lib/kafka/metadata.kafkajs';
import { dynamoClientFromEnv } from '../../lib/runtime/compose';
import { startFaultProxies, type FaultProxies, type FaultProxy } from '../support/fault-proxy';
import { runRounds } from './driver';
import { disconnectChaosEnv, openChaosEnv, type ChaosEnv } from './env';
import type { ScenarioName, ScenarioResult } from './harness';
import type { RoundScenario } from './scenario';

/** What the system's clients met through the proxies. */
export type NetworkMet = {
  /** kafkajs's WARN and ERROR lines (connection errors, closed connections). */
  kafkaLines: string[];
  /** DynamoDB attempts (the SDK's resends included), their durations, and the failed ones by error name and command. */
  dynamoAttempts: number;
  dynamoAttemptMs: number[];
  dynamoFailed: Array<{ error: string; command: string }>;
};

/** The proxies of a network scenario and the system's DynamoDB client through one of them. */
export type NetworkControl = {
  /** The Kafka proxy's address: the streams' bootstrap broker. */
  brokers: string;
  /** The streams' other `kafka` settings (SASL_SSL with SCRAM). */
  settings: Record<string, unknown>;
  kafka: FaultProxy;
  dynamo: FaultProxy;
  dynamoClient: DynamoDBClient;
  met: NetworkMet;
};

/** A DynamoDB client through `url`, as the functions make it, counting every attempt and the failed ones. */
function countedDynamo(url: string, met: NetworkMet): DynamoDBClient {
  const client = dynamoClientFromEnv({ ...process.env, DYNAMODB_ENDPOINT: url });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      met.dynamoAttempts++;
      const t0 = Date.now();
      try {
        return await next(args);
      } catch (err) {
        const e = err as { name?: string; code?: string };
        met.dynamoFailed.push({ error: e.code ?? e.name ?? 'unknown', command: context.commandName ?? 'unknown' });
        throw err;
      } finally {
        met.dynamoAttemptMs.push(Date.now() - t0);
      }
    },
    // Inside the SDK's retry: every attempt.
    { step: 'finalizeRequest', priority: 'low', name: 'chaosCountAttempts' },
  );
  return client;
}

/** What kafkajs says about a connection that failed or closed (its DEBUG lines included: a closed connection is one). */
const CONNECTION_LINE = /closed connection|connection error|connection timeout|ECONNRESET|EPIPE|no answer from|timed out/i;

/** A client as the functions make it (`createKafka`), whose connection lines are kept in `met`. */
async function instrumentedKafka(cfg: KafkaConnectionConfig, met: NetworkMet): Promise<Kafka> {
  const log: KafkaLogFn = (level, message) => {
    if (CONNECTION_LINE.test(message)) met.kafkaLines.push(`${level}: ${message}`);
  };
  const kafka = await createKafka(cfg, { log });
  // kafkajs reports a connection the peer closed at DEBUG only; the filter above keeps the few lines that count.
  kafka.logger().setLogLevel(logLevel.DEBUG);
  return kafka;
}

/**
 * Runs a round-based scenario with the streams behind the fault proxies: a private broker with a
 * proxied listener, the proxies, the clients; all stopped in `finally`, the proxies' faults first.
 */
export async function runThroughProxies(
  env: ChaosEnv,
  scenario: ScenarioName,
  rounds: RoundScenario,
  seed: number,
  opts: { budgetMs?: number },
): Promise<ScenarioResult> {
  const dir = mkdtempSync(join(tmpdir(), 'chaos-network-'));
  let proxies: FaultProxies | undefined;
  let broker: KafkaInstance | undefined;
  let priv: ChaosEnv | undefined;
  let control: NetworkControl | undefined;
  try {
    proxies = await startFaultProxies();
    // The Kafka proxy listens before the broker starts, so the address the broker advertises is held
    // from the start: a port only picked free here could be taken (by one of the broker's own ports,
    // or a connection's) before Toxiproxy bound it, and Toxiproxy would refuse the proxy (HTTP 500).
    // Its upstream is set once the broker's proxied listener is known.
    const kafkaProxy = await proxies.proxy(`127.0.0.1:${await freePort()}`);
    const kafkaListen = kafkaProxy.address;
    // The watchdog kills the JVM if this test process dies before `finally` runs.
    const scram = { name: 'chaos', password: randomBytes(12).toString('base64url') };
    broker = await startKafka({
      dir: join(dir, 'kafka'),
      cacheDir: CACHE_DIR,
      ownerPid: process.pid,
      port: String(await freePort()),
      startTimeoutMs: 60_000,
      secured: { scramUsers: [scram] },
      proxied: { advertised: kafkaListen },
    });
    await kafkaProxy.retarget(broker.proxied!.listener);
    process.env.CHAOS_NETWORK_SCRAM_PASSWORD = scram.password;
    const met: NetworkMet = { kafkaLines: [], dynamoAttempts: 0, dynamoAttemptMs: [], dynamoFailed: [] };
    const dynamo = await proxies.proxy(new URL(process.env.DYNAMODB_ENDPOINT as string).host);
    const settings = {
      ssl: { ca: readFileSync(broker.secured!.tls.caCert, 'utf8') },
      sasl: { mechanism: 'scram-sha-512', username: scram.name, password: { env: 'CHAOS_NETWORK_SCRAM_PASSWORD' } },
    };
    control = {
      brokers: kafkaListen,
      settings,
      kafka: kafkaProxy,
      dynamo,
      dynamoClient: countedDynamo(dynamo.url, met),
      met,
    };
    // Set-up and checks reach the broker directly, on its own listener.
    const direct = new Kafka({ clientId: 'chaos-network', brokers: [broker.brokers], logLevel: logLevel.NOTHING });
    priv = await openChaosEnv(direct, env.ddb, env.created);
    const streamKafka = parseStreamConfig({ id: 'chaos', kafka: { brokers: [kafkaListen], ...settings }, topics: ['any'] }, 'chaos').kafka;
    priv.readerKafka = await instrumentedKafka(streamKafka, met);
    priv.metadata = createMetadataCache(async (cfg) => createKafkajsMetadata(await instrumentedKafka(cfg, met)));
    return await runRounds(priv, scenario, rounds, seed, { ...opts, network: control, startedAt: Date.now() });
  } finally {
    await Promise.allSettled([control?.kafka.clear(), control?.dynamo.clear()]);
    if (priv) await disconnectChaosEnv(priv);
    control?.dynamoClient.destroy();
    await proxies?.stop();
    if (broker) await stopKafka(broker);
    rmSync(dir, { recursive: true, force: true });
  }
}
