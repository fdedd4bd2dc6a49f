/**
 * The chaos scenarios that need a broker of their own, so the shared test broker other test files
 * use is never restarted or killed: `broker-restart` (a private broker, restarted mid-run) and
 * `leader-killed` (a private 3-broker cluster, a leader killed). Both are started here and stopped
 * in `finally`; their tables are on the shared emulator and recorded in the environment.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import {
  killKafkaNode,
  restartKafka,
  startKafka,
  startKafkaCluster,
  stopKafka,
  stopKafkaCluster,
  type KafkaCluster,
  type KafkaInstance,
} from '../../infra/local/kafka';
import { freePort } from '../../infra/local/process';
import { CACHE_DIR } from '../../infra/local/stack/dirs';
import { parseStreamConfig } from '../../lib/config/schema';
import { createKafka } from '../../lib/kafka/client';
import { runRounds } from './driver';
import { disconnectChaosEnv, openChaosEnv, type ChaosEnv } from './env';
import type { ScenarioName, ScenarioResult } from './harness';
import type { RoundScenario } from './scenario';

/** Restarts the scenario's private broker (broker-restart only), which the streams reach over SASL_SSL with SCRAM. */
export type BrokerControl = { brokers: string; kafka: Record<string, unknown>; restart(): Promise<void> };

/** The scenario's private 3-broker cluster (leader-killed only): kills the leader of a partition. */
export type ClusterControl = { brokers: string; startMs: number; killLeaderOf(topic: string, partition: number): Promise<number> };

/**
 * `broker-restart` runs against a private broker, which the streams reach over SASL_SSL with SCRAM;
 * its tables are on the shared emulator and recorded in `env.created`.
 */
export async function runOnPrivateBroker(
  env: ChaosEnv,
  scenario: ScenarioName,
  rounds: RoundScenario,
  seed: number,
  opts: { budgetMs?: number },
): Promise<ScenarioResult> {
  const t0 = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'chaos-broker-'));
  let broker: KafkaInstance | undefined;
  let priv: ChaosEnv | undefined;
  try {
    // The watchdog kills the JVM if this test process dies before `finally` runs.
    // Secured: the streams read over SASL_SSL with SCRAM-SHA-512 (set-up and checks use PLAINTEXT), so
    // reconnecting after the restart re-authenticates every connection.
    const scram = { name: 'chaos', password: randomBytes(12).toString('base64url') };
    broker = await startKafka({
      dir: join(dir, 'kafka'),
      cacheDir: CACHE_DIR,
      ownerPid: process.pid,
      port: String(await freePort()),
      startTimeoutMs: 60_000,
      secured: { scramUsers: [scram] },
    });
    process.env.CHAOS_SCRAM_PASSWORD = scram.password;
    const kafka = new Kafka({ clientId: 'chaos-private', brokers: [broker.brokers], logLevel: logLevel.NOTHING });
    priv = await openChaosEnv(kafka, env.ddb, env.created);
    const secured = broker.secured!;
    const streamKafka = {
      ssl: { ca: readFileSync(secured.tls.caCert, 'utf8') },
      sasl: { mechanism: 'scram-sha-512', username: scram.name, password: { env: 'CHAOS_SCRAM_PASSWORD' } },
    };
    priv.readerKafka = await createKafka(
      parseStreamConfig({ id: 'chaos', kafka: { brokers: [secured.saslSsl], ...streamKafka }, topics: ['any'] }, 'chaos').kafka,
    );
    const control: BrokerControl = {
      brokers: secured.saslSsl,
      kafka: streamKafka,
      restart: async () => {
        broker = await restartKafka(broker as KafkaInstance);
      },
    };
    const res = await runRounds(priv, scenario, rounds, seed, { ...opts, broker: control, startedAt: t0 });
    return res;
  } finally {
    if (priv) await disconnectChaosEnv(priv);
    if (broker) await stopKafka(broker);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `leader-killed` runs against a private 3-broker cluster (replication factor 3, min.insync.replicas
 * 2), started here and stopped in `finally`; its budget starts once the cluster is up.
 */
export async function runOnCluster(
  env: ChaosEnv,
  scenario: ScenarioName,
  rounds: RoundScenario,
  seed: number,
  opts: { budgetMs?: number },
): Promise<ScenarioResult> {
  const dir = mkdtempSync(join(tmpdir(), 'chaos-cluster-'));
  let cluster: KafkaCluster | undefined;
  let priv: ChaosEnv | undefined;
  try {
    const t0 = Date.now();
    // Watchdogs kill the JVMs if this test process dies before `finally` runs.
    cluster = await startKafkaCluster({ dir, cacheDir: CACHE_DIR, ownerPid: process.pid, brokers: 3 });
    const c = cluster;
    const kafka = new Kafka({ clientId: 'chaos-cluster', brokers: c.brokers.split(','), logLevel: logLevel.NOTHING });
    priv = await openChaosEnv(kafka, env.ddb, env.created);
    const admin = priv.admin;
    const control: ClusterControl = {
      brokers: c.brokers,
      startMs: Date.now() - t0,
      async killLeaderOf(topic, partition) {
        const md = await admin.fetchTopicMetadata({ topics: [topic] });
        const leader = md.topics[0]?.partitions.find((p) => p.partitionId === partition)?.leader;
        if (leader === undefined || leader < 0) throw new Error(`chaos harness: ${topic}/${partition} has no leader to kill`);
        await killKafkaNode(c, leader);
        return leader;
      },
    };
    return await runRounds(priv, scenario, rounds, seed, { ...opts, cluster: control });
  } finally {
    if (priv) await disconnectChaosEnv(priv);
    if (cluster) await stopKafkaCluster(cluster, 5_000);
    rmSync(dir, { recursive: true, force: true });
  }
}
