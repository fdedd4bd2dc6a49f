/**
 * A real Apache Kafka broker for local runs and tests: KRaft, single node (combined broker and
 * controller), loopback only; or a small cluster of such nodes forming one controller quorum
 * (`startKafkaCluster`). Jars come from Maven Central (infra/local/kafka/pom.xml) into a cache on
 * first use and run on the machine's Java 17+.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { PrerequisiteError } from '../../lib/errors';
import { ensureTlsMaterial, type TlsMaterial } from './kafka-tls';
import { capOldLog, logLimits, type LogLimits } from './logs';
import { describePortOwner } from './ownership';
import { packageFile } from '../../lib/paths';
import { LOOPBACK, choosePort, freePort, killProcess, portInUse, requireCommand, spawnService, stopProcess, waitUntil } from './process';

const POM = packageFile('infra', 'local', 'kafka', 'pom.xml');

export type KafkaOptions = {
  /** Directory for data, config and logs of this broker instance. */
  dir: string;
  /** Cache directory for the resolved jars (shared by all instances). */
  cacheDir: string;
  /** Watchdog owner: the broker dies when this process dies. */
  ownerPid?: number;
  /** Fixed client port (else a free one is chosen). */
  port?: string;
  /** Kafka's default is 3000 ms; only tests that exercise consumer groups want 0. */
  groupInitialRebalanceDelayMs?: number;
  startTimeoutMs?: number;
  /**
   * Start on `dir` as it is when it already holds a formatted broker (a restart): keep its data,
   * its server.properties (same client and controller ports) and skip formatting. A fresh dir is
   * formatted as usual. Default false: every start formats a fresh KRaft log dir.
   */
  reuseDir?: boolean;
  /** Fixed controller port (else a free one is chosen). */
  controllerPort?: number;
  /** This node's place in a multi-node cluster (default: a single node with replication factor 1). */
  role?: ClusterRole;
  /** KRaft cluster id to format with (every node of a cluster shares one); default a fresh one. */
  clusterId?: string;
  /** Ready once metadata lists this many brokers. Default 1. */
  expectBrokers?: number;
  /** JVM max heap, e.g. '384m'. Default LOCAL_KAFKA_HEAP, else 1g. */
  heap?: string;
  /**
   * Secured listeners beside PLAINTEXT (which stays for the broker's own traffic and the tests' set-up):
   * SASL_SSL taking only SCRAM-SHA-512, with these users created when the log dir is formatted, and SSL
   * requiring a client certificate, both with the TLS material of `kafka-tls.ts` in `<dir>/tls`.
   */
  secured?: { scramUsers: ScramUser[]; /** Shared TLS material (a cluster's nodes share one CA); default `<dir>/tls`. */ tlsDir?: string };
  /**
   * A PLAINTEXT listener beside the others whose advertised address is `advertised` (`host:port`): a
   * proxy listening there and forwarding to the listener (`KafkaInstance.proxied.listener`) then
   * carries every connection of a client bootstrapped through it, the broker's own redirects included
   * (the fault proxy, test/support/fault-proxy.ts). On a `secured` broker it speaks SASL_SSL with
   * SCRAM-SHA-512, as the secured listener does.
   */
  proxied?: { advertised: string };
};

/** A SCRAM-SHA-512 user of a secured broker. */
export type ScramUser = { name: string; password: string };

/** Where a secured broker listens for secured clients, and the files they trust and present. */
export type SecuredListeners = { saslSsl: string; ssl: string; tls: TlsMaterial; scramUsers: ScramUser[] };

export type KafkaInstance = {
  brokers: string;
  pid: number;
  watchdogPid?: number;
  logFile: string;
  dir: string;
  /** The options it was started with (what `restartKafka` starts it again with). */
  options?: KafkaOptions;
  /** Its secured listeners, when started with `secured`. */
  secured?: SecuredListeners;
  /** Its proxied listener, when started with `proxied`: where the proxy forwards to, and the address the broker advertises. */
  proxied?: { listener: string; advertised: string };
};

/**
 * A KRaft cluster id: 16 random bytes in base64url (Kafka's format). Like Kafka's own
 * Uuid.randomUuid, never one starting with '-', which the storage tool would read as a flag.
 */
export function newClusterId(random: (n: number) => Buffer = randomBytes): string {
  for (;;) {
    const id = random(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** The Kafka version pinned in the pom. */
function kafkaVersion(): string {
  const m = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(readFileSync(POM, 'utf8'));
  if (!m?.[1]) throw new PrerequisiteError(`no <kafka.version> in ${POM}`);
  return m[1];
}

/** Finds a Java 17+ runtime (JAVA_HOME first, then PATH) or explains how to get one. */
export function javaBinary(): string {
  const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
  const out = requireCommand(
    java,
    ['-version'],
    'install a Java 17+ runtime (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME',
  );
  const m = /version "(\d+)(?:\.(\d+))?/.exec(out);
  const major = m?.[1] === '1' ? Number(m?.[2]) : Number(m?.[1]);
  if (!Number.isFinite(major) || major < 17) {
    throw new PrerequisiteError(`Kafka 4 needs Java 17 or newer, found: ${out.split('\n')[0]}; set JAVA_HOME to a newer JDK`);
  }
  return java;
}

/** Resolves the broker jars with Maven into `cacheDir` once; later calls reuse the cache. */
export function ensureKafkaJars(cacheDir: string): string {
  const libs = join(cacheDir, `kafka-${kafkaVersion()}`, 'libs');
  if (existsSync(libs) && readdirSync(libs).some((f) => f.startsWith('kafka_2.13-'))) return libs;
  requireCommand('mvn', ['-v'], 'install Maven (Debian: apt-get install maven) to resolve the Kafka jars');
  const tmp = `${libs}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  process.stderr.write(`resolving Apache Kafka ${kafkaVersion()} jars with Maven (first use only)...\n`);
  const res = spawnSync('mvn', ['-B', '-q', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${tmp}`], {
    encoding: 'utf8',
    timeout: 15 * 60_000,
  });
  if (res.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    const why = res.error ? String(res.error) : `${res.stdout}${res.stderr}`.trim().split('\n').slice(-15).join('\n');
    throw new PrerequisiteError(`Maven could not resolve org.apache.kafka:kafka_2.13:${kafkaVersion()}:\n${why}`);
  }
  // Rename last so an interrupted download never looks like a complete cache.
  rmSync(libs, { recursive: true, force: true });
  renameSync(tmp, libs);
  return libs;
}

/** Where one node of a cluster sits in it: its id, every voter of the quorum, and topic defaults. */
export type ClusterRole = {
  nodeId: number;
  /** Controller port of every node, by node id (all nodes are voters). */
  controllerPorts: Record<number, number>;
  /** Replicas of new topics and of the internal topics. */
  replicationFactor: number;
  minInsyncReplicas: number;
};

const SINGLE_NODE = (controllerPort: number): ClusterRole => ({
  nodeId: 1,
  controllerPorts: { 1: controllerPort },
  replicationFactor: 1,
  minInsyncReplicas: 1,
});

/** Ports and TLS files of the secured listeners, for `serverProperties`. */
export type SecuredPorts = { saslSslPort: number; sslPort: number; tls: TlsMaterial };

/** The listener settings of a secured broker: SASL_SSL with SCRAM-SHA-512 only, and SSL requiring client certificates. */
function securedProperties(s: SecuredPorts): Record<string, string> {
  return {
    'ssl.keystore.type': 'PEM',
    'ssl.keystore.location': s.tls.brokerKeyStore,
    'ssl.truststore.type': 'PEM',
    'ssl.truststore.location': s.tls.caCert,
    'listener.name.ssl.ssl.client.auth': 'required',
    ...securedListener('sasl_ssl'),
  };
}

/** A SASL_SSL listener's settings: SCRAM-SHA-512 only. */
function securedListener(name: string): Record<string, string> {
  return {
    [`listener.name.${name}.sasl.enabled.mechanisms`]: 'SCRAM-SHA-512',
    [`listener.name.${name}.scram-sha-512.sasl.jaas.config`]: 'org.apache.kafka.common.security.scram.ScramLoginModule required;',
  };
}

/** The server.properties of one combined broker+controller node (pure; exported for tests). */
export function serverProperties(
  dir: string,
  port: number,
  controllerPort: number,
  opts: KafkaOptions,
  role = SINGLE_NODE(controllerPort),
  secured?: SecuredPorts,
  proxiedPort?: number,
): string {
  const voters = Object.entries(role.controllerPorts).map(([id, p]) => `${id}@${LOOPBACK}:${p}`);
  const rf = role.replicationFactor;
  const minIsr = role.minInsyncReplicas;
  const extra = secured ? `,SASL_SSL://${LOOPBACK}:${secured.saslSslPort},SSL://${LOOPBACK}:${secured.sslPort}` : '';
  const proxied =
    opts.proxied && proxiedPort !== undefined
      ? {
          bind: `,PROXIED://${LOOPBACK}:${proxiedPort}`,
          advertised: `,PROXIED://${opts.proxied.advertised}`,
          protocol: `,PROXIED:${secured ? 'SASL_SSL' : 'PLAINTEXT'}`,
        }
      : undefined;
  const securedProtocols = secured ? ',SASL_SSL:SASL_SSL,SSL:SSL' : '';
  const props: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': role.nodeId,
    'controller.quorum.voters': voters.join(','),
    listeners: `PLAINTEXT://${LOOPBACK}:${port},CONTROLLER://${LOOPBACK}:${controllerPort}${extra}${proxied?.bind ?? ''}`,
    'advertised.listeners': `PLAINTEXT://${LOOPBACK}:${port}${extra}${proxied?.advertised ?? ''}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': `PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT${securedProtocols}${proxied?.protocol ?? ''}`,
    ...(secured ? securedProperties(secured) : {}),
    ...(secured && proxied ? securedListener('proxied') : {}),
    'log.dirs': join(dir, 'data'),
    'num.partitions': 1,
    'auto.create.topics.enable': 'false',
    'delete.topic.enable': 'true',
    // Internal topics replicated like user topics, with few partitions (fast coordinator start).
    'default.replication.factor': rf,
    'min.insync.replicas': minIsr,
    'offsets.topic.replication.factor': rf,
    'offsets.topic.num.partitions': 1,
    'transaction.state.log.replication.factor': rf,
    'transaction.state.log.min.isr': minIsr,
    'transaction.state.log.num.partitions': 1,
    'share.coordinator.state.topic.replication.factor': rf,
    'share.coordinator.state.topic.min.isr': minIsr,
    // Small segments and fast checks, so retention and compaction tests finish in seconds.
    'log.segment.bytes': 16 * 1024 * 1024,
    'log.retention.check.interval.ms': 1000,
    'log.segment.delete.delay.ms': 0,
    'log.cleaner.backoff.ms': 1000,
    'log.cleaner.dedupe.buffer.size': 8 * 1024 * 1024,
    'file.delete.delay.ms': 0,
    // Many small partitions on one broker (the planner benchmark): keep per-partition cost low.
    'log.index.size.max.bytes': 1024 * 1024,
    'num.network.threads': 3,
    'num.io.threads': 4,
    'socket.request.max.bytes': 200 * 1024 * 1024,
  };
  if (opts.groupInitialRebalanceDelayMs !== undefined) {
    props['group.initial.rebalance.delay.ms'] = opts.groupInitialRebalanceDelayMs;
  }
  return Object.entries(props)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
}

/** log4j2 settings: one size-rotated file (the state change and request logs only at WARN). */
export function log4jConfig(logFile: string, limits: LogLimits): string {
  return [
    'rootLogger.level=INFO',
    'rootLogger.appenderRef.file.ref=FILE',
    'appender.file.type=RollingFile',
    'appender.file.name=FILE',
    `appender.file.fileName=${logFile}`,
    `appender.file.filePattern=${logFile}.%i`,
    'appender.file.layout.type=PatternLayout',
    'appender.file.layout.pattern=[%d] %p %m (%c)%n',
    'appender.file.policies.type=Policies',
    'appender.file.policies.size.type=SizeBasedTriggeringPolicy',
    `appender.file.policies.size.size=${limits.fileBytes}`,
    'appender.file.strategy.type=DefaultRolloverStrategy',
    `appender.file.strategy.max=${limits.keptFiles}`,
    // server.log.1 is the newest rotated file.
    'appender.file.strategy.fileIndex=min',
    // The state change and request logs are noisy and not needed for tests.
    'logger.state.name=state.change.logger',
    'logger.state.level=WARN',
    'logger.request.name=kafka.request.logger',
    'logger.request.level=WARN',
  ].join('\n');
}

/** True once the broker answers a metadata request listing `expectBrokers` brokers (1: itself only) and a controller. */
export async function kafkaReady(brokers: string, expectBrokers = 1, requestTimeoutMs = 2000): Promise<boolean> {
  const admin = new Kafka({
    clientId: 'local-stack-probe',
    brokers: brokers.split(','),
    logLevel: logLevel.NOTHING,
    connectionTimeout: Math.min(requestTimeoutMs, 5000),
    requestTimeout: requestTimeoutMs,
    retry: { retries: 0 },
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length === expectBrokers && cluster.controller !== null;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** The initial heap: 256m, or the max heap when that is smaller (a JVM refuses -Xms above -Xmx). */
export function minHeap(maxHeap: string): string {
  const mb = (h: string): number => {
    const m = /^(\d+)([kmg]?)$/i.exec(h.trim());
    if (!m) throw new PrerequisiteError(`heap size ${JSON.stringify(h)} is not a JVM size like 384m or 1g`);
    const unit = (m[2] ?? '').toLowerCase();
    return Number(m[1]) * (unit === 'g' ? 1024 : unit === 'k' ? 1 / 1024 : unit === 'm' ? 1 : 1 / (1024 * 1024));
  };
  return mb(maxHeap) < 256 ? maxHeap : '256m';
}

/**
 * The broker's own ports, read from its server.properties, must be free before a restart: the JVM
 * would only say so deep in its log, after the start-up wait.
 */
async function requireFreePorts(propsFile: string, port: number): Promise<void> {
  const controller = /^listeners=.*CONTROLLER:\/\/[^:]+:(\d+)/m.exec(readFileSync(propsFile, 'utf8'))?.[1];
  for (const [p, what] of [
    [port, 'client'],
    [Number(controller), 'controller'],
  ] as const) {
    if (Number.isInteger(p) && (await portInUse(p))) {
      const who = describePortOwner(p);
      throw new PrerequisiteError(
        `Kafka's ${what} port ${p} (recorded in ${propsFile}) is taken by ` +
          `${who ?? 'another process'}: cannot restart the broker on its data`,
      );
    }
  }
}

/** The ports of a broker: those its server.properties records (a restart on its data), else fresh ones written there. */
async function brokerPorts(
  opts: KafkaOptions,
  propsFile: string,
  reuse: boolean,
): Promise<{ port: number; secured?: SecuredPorts; proxiedPort?: number }> {
  // A broker formatted secured restarts secured, whatever the restart asks.
  const formattedSecured = reuse && /^listeners=.*\bSASL_SSL:\/\//m.test(readFileSync(propsFile, 'utf8'));
  const tls = opts.secured || formattedSecured ? ensureTlsMaterial(opts.secured?.tlsDir ?? join(opts.dir, 'tls')) : undefined;
  if (reuse) {
    // Same ports as before: clients reconnect to the address they know.
    const props = readFileSync(propsFile, 'utf8');
    const listener = (name: string) => Number(new RegExp(`^listeners=.*\\b${name}://[^:]+:(\\d+)`, 'm').exec(props)?.[1]);
    const port = listener('PLAINTEXT');
    if (!Number.isInteger(port)) throw new PrerequisiteError(`no PLAINTEXT listener in ${propsFile}`);
    if (opts.port !== undefined && opts.port !== '' && Number(opts.port) !== port) {
      throw new PrerequisiteError(`${opts.dir} was formatted for port ${port}, not ${opts.port}`);
    }
    await requireFreePorts(propsFile, port);
    const saslSslPort = listener('SASL_SSL');
    if (tls && !Number.isInteger(saslSslPort)) throw new PrerequisiteError(`${opts.dir} was formatted without secured listeners`);
    const proxiedPort = listener('PROXIED');
    return {
      port,
      secured: tls ? { saslSslPort, sslPort: listener('SSL'), tls } : undefined,
      ...(Number.isInteger(proxiedPort) && { proxiedPort }),
    };
  }
  const port = await choosePort(opts.port, 'LOCAL_KAFKA_PORT');
  const controllerPort = opts.controllerPort ?? (await freePort());
  const secured = tls ? { saslSslPort: await freePort(), sslPort: await freePort(), tls } : undefined;
  const proxiedPort = opts.proxied ? await freePort() : undefined;
  writeFileSync(propsFile, serverProperties(opts.dir, port, controllerPort, opts, opts.role, secured, proxiedPort));
  // The users the log dir is formatted with, for whoever restarts the broker on it.
  if (opts.secured) writeFileSync(scramUsersFile(opts.dir), JSON.stringify(opts.secured.scramUsers), { mode: 0o600 });
  return { port, secured, proxiedPort };
}

const scramUsersFile = (dir: string): string => join(dir, 'scram-users.json');

/** The SCRAM users a secured broker's log dir was formatted with. */
function formattedScramUsers(dir: string): ScramUser[] {
  return existsSync(scramUsersFile(dir)) ? (JSON.parse(readFileSync(scramUsersFile(dir), 'utf8')) as ScramUser[]) : [];
}

/** Formats the KRaft metadata log (a fresh dir), creating the SCRAM users of a secured broker. */
function formatLogDir(java: string, jvm: string[], propsFile: string, opts: KafkaOptions): void {
  const clusterId = opts.clusterId ?? newClusterId();
  const scram = (opts.secured?.scramUsers ?? []).flatMap((u) => ['--add-scram', `SCRAM-SHA-512=[name=${u.name},password=${u.password}]`]);
  const fmt = spawnSync(java, [...jvm, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', propsFile, ...scram], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (fmt.status !== 0) throw new PrerequisiteError(`formatting the Kafka log dir failed:\n${fmt.stdout}${fmt.stderr}`);
}

/** Formats a fresh KRaft log dir (unless `reuseDir` finds a formatted one) and starts the broker; resolves once it accepts requests. */
export async function startKafka(opts: KafkaOptions): Promise<KafkaInstance> {
  const java = javaBinary();
  const libs = ensureKafkaJars(opts.cacheDir);
  mkdirSync(opts.dir, { recursive: true });
  const propsFile = join(opts.dir, 'server.properties');
  const logFile = join(opts.dir, 'server.log');
  const log4jFile = join(opts.dir, 'log4j2.properties');
  const reuse = opts.reuseDir === true && existsSync(propsFile) && existsSync(join(opts.dir, 'data', 'meta.properties'));
  const { port, secured, proxiedPort } = await brokerPorts(opts, propsFile, reuse);
  const limits = logLimits();
  capOldLog(logFile, limits);
  writeFileSync(log4jFile, log4jConfig(logFile, limits));
  const classpath = `${libs}/*`;
  const jvm = ['-Djava.awt.headless=true', `-Dlog4j2.configurationFile=${log4jFile}`, '-cp', classpath];
  // KRaft needs a formatted metadata log.
  if (!reuse) formatLogDir(java, jvm, propsFile, opts);

  const heap = opts.heap ?? process.env.LOCAL_KAFKA_HEAP ?? '1g';
  // The JVM's own output (log4j writes server.log): start-up failures only, but appended at every start.
  const stdoutFile = join(opts.dir, 'stdout.log');
  capOldLog(stdoutFile, limits);
  const svc = spawnService({
    cmd: java,
    args: [`-Xms${minHeap(heap)}`, `-Xmx${heap}`, '-XX:+UseG1GC', '-XX:MaxGCPauseMillis=20', ...jvm, 'kafka.Kafka', propsFile],
    logFile: stdoutFile,
    ownerPid: opts.ownerPid,
  });
  const brokers = `${LOOPBACK}:${port}`;
  try {
    await waitUntil('Kafka broker', () => kafkaReady(brokers, opts.expectBrokers ?? 1), {
      timeoutMs: opts.startTimeoutMs ?? 90_000,
      intervalMs: 300,
      pid: svc.pid,
      logFile,
    });
  } catch (err) {
    // Never leave a half-started JVM behind.
    await stopProcess(svc.pid);
    if (svc.watchdogPid) await stopProcess(svc.watchdogPid, 1000);
    throw err;
  }
  const listeners: SecuredListeners | undefined = secured && {
    saslSsl: `${LOOPBACK}:${secured.saslSslPort}`,
    ssl: `${LOOPBACK}:${secured.sslPort}`,
    tls: secured.tls,
    scramUsers: formattedScramUsers(opts.dir),
  };
  const advertised =
    proxiedPort !== undefined ? /^advertised\.listeners=.*\bPROXIED:\/\/([^,\s]+)/m.exec(readFileSync(propsFile, 'utf8'))?.[1] : undefined;
  const proxied = advertised ? { listener: `${LOOPBACK}:${proxiedPort}`, advertised } : undefined;
  return { brokers, pid: svc.pid, watchdogPid: svc.watchdogPid, logFile, dir: opts.dir, options: opts, secured: listeners, proxied };
}

/** Stops the broker with SIGTERM (SIGKILL after `graceMs`), then its watchdog. Its dir is kept. */
export async function stopKafka(instance: KafkaInstance, graceMs = 10_000): Promise<void> {
  await stopProcess(instance.pid, graceMs);
  if (instance.watchdogPid) await stopProcess(instance.watchdogPid, 1000);
}

/**
 * Stops the broker (SIGTERM) and starts it again on the same dir and port, with its data (no
 * re-formatting); resolves with the new instance once it accepts requests.
 */
export async function restartKafka(instance: KafkaInstance, opts: Partial<KafkaOptions> = {}): Promise<KafkaInstance> {
  const base = instance.options;
  if (!base) throw new PrerequisiteError(`cannot restart the broker at ${instance.brokers}: it was not started by startKafka`);
  await stopKafka(instance);
  return startKafka({ ...base, ...opts, dir: instance.dir, port: instance.brokers.split(':').at(-1), reuseDir: true });
}

export type KafkaClusterOptions = {
  /** Parent directory; node N lives in `<dir>/node-N`. */
  dir: string;
  cacheDir: string;
  ownerPid?: number;
  /** Number of nodes (each a broker and a controller voter). Default 3. */
  brokers?: number;
  /** Default the number of nodes (capped at 3). */
  replicationFactor?: number;
  /** Default 2 when there are 2 replicas or more, else 1. */
  minInsyncReplicas?: number;
  /** JVM max heap per node. Default LOCAL_KAFKA_HEAP, else 384m (several JVMs share the machine). */
  heap?: string;
  startTimeoutMs?: number;
  /** Secured listeners on every node (see `KafkaOptions.secured`), one CA and one set of certificates for all. */
  secured?: { scramUsers: ScramUser[] };
};

export type KafkaCluster = {
  /** Bootstrap list of every node, comma-separated (what KAFKA_BROKERS takes). */
  brokers: string;
  /** Node id -> its broker instance; a killed node keeps its entry (its dir and ports). */
  nodes: Map<number, KafkaInstance>;
  /** With `secured`: every node's SASL_SSL and SSL addresses (comma-separated), the shared TLS files and users. */
  secured?: SecuredListeners;
};

/** The roles of an N-node cluster: node ids 1..N, all voters, topic defaults (pure; exported for tests). */
export function clusterRoles(
  controllerPorts: number[],
  opts: Pick<KafkaClusterOptions, 'replicationFactor' | 'minInsyncReplicas'> = {},
): ClusterRole[] {
  const n = controllerPorts.length;
  if (!Number.isInteger(n) || n < 1) throw new PrerequisiteError(`a Kafka cluster needs at least one node, not ${n}`);
  const replicationFactor = opts.replicationFactor ?? Math.min(n, 3);
  const minInsyncReplicas = opts.minInsyncReplicas ?? (replicationFactor >= 2 ? 2 : 1);
  if (replicationFactor < 1 || replicationFactor > n) {
    throw new PrerequisiteError(`replication factor ${replicationFactor} needs 1 to ${n} brokers`);
  }
  if (minInsyncReplicas < 1 || minInsyncReplicas > replicationFactor) {
    throw new PrerequisiteError(
      `min.insync.replicas ${minInsyncReplicas} must be between 1 and the replication factor ${replicationFactor}`,
    );
  }
  const ports = Object.fromEntries(controllerPorts.map((p, i) => [i + 1, p]));
  return controllerPorts.map((_, i) => ({ nodeId: i + 1, controllerPorts: ports, replicationFactor, minInsyncReplicas }));
}

/**
 * Starts N combined broker+controller nodes forming one KRaft quorum (static voters), each with its
 * own dir, ports and log; resolves once every node sees all N brokers. Loses no quorum when one of
 * three nodes dies, which is what leader-failover tests need.
 */
export async function startKafkaCluster(opts: KafkaClusterOptions): Promise<KafkaCluster> {
  const n = opts.brokers ?? 3;
  const ports = await distinctFreePorts(2 * n);
  const roles = clusterRoles(ports.slice(n), opts);
  const clusterId = newClusterId();
  const heap = opts.heap ?? process.env.LOCAL_KAFKA_HEAP ?? '384m';
  const started = await Promise.allSettled(
    roles.map((role, i) =>
      startKafka({
        dir: join(opts.dir, `node-${role.nodeId}`),
        cacheDir: opts.cacheDir,
        ownerPid: opts.ownerPid,
        port: String(ports[i]),
        controllerPort: ports[n + i],
        role,
        clusterId,
        expectBrokers: n,
        heap,
        startTimeoutMs: opts.startTimeoutMs ?? 120_000,
        ...(opts.secured ? { secured: { ...opts.secured, tlsDir: join(opts.dir, 'tls') } } : {}),
      }),
    ),
  );
  const nodes = new Map<number, KafkaInstance>();
  started.forEach((r, i) => r.status === 'fulfilled' && nodes.set(i + 1, r.value));
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    // Never leave part of a cluster running.
    await stopKafkaCluster({ brokers: '', nodes });
    throw failed.reason;
  }
  const all = [...nodes.values()].flatMap((k) => (k.secured ? [k.secured] : []));
  const secured: SecuredListeners | undefined = all[0] && {
    ...all[0],
    saslSsl: all.map((s) => s.saslSsl).join(','),
    ssl: all.map((s) => s.ssl).join(','),
  };
  return {
    brokers: ports
      .slice(0, n)
      .map((p) => `${LOOPBACK}:${p}`)
      .join(','),
    nodes,
    ...(secured ? { secured } : {}),
  };
}

/** Kills one node with SIGKILL (no controlled shutdown: its partitions keep it as leader until the controller notices). */
export async function killKafkaNode(cluster: KafkaCluster, nodeId: number): Promise<void> {
  const node = clusterNode(cluster, nodeId);
  await killProcess(node.pid);
  if (node.watchdogPid) await stopProcess(node.watchdogPid, 1000);
}

/** Starts a stopped or killed node again on its dir and ports; resolves once it rejoined the cluster. */
export async function restartKafkaNode(cluster: KafkaCluster, nodeId: number): Promise<KafkaInstance> {
  const node = await restartKafka(clusterNode(cluster, nodeId));
  cluster.nodes.set(nodeId, node);
  return node;
}

/** Stops every node (SIGTERM, SIGKILL after the grace time) and their watchdogs. Dirs are kept. */
export async function stopKafkaCluster(cluster: KafkaCluster, graceMs = 10_000): Promise<void> {
  await Promise.all([...cluster.nodes.values()].map((node) => stopKafka(node, graceMs)));
}

function clusterNode(cluster: KafkaCluster, nodeId: number): KafkaInstance {
  const node = cluster.nodes.get(nodeId);
  if (!node) throw new PrerequisiteError(`the cluster has no node ${nodeId} (nodes: ${[...cluster.nodes.keys()].join(', ')})`);
  return node;
}

/** `count` free loopback ports, all different (the kernel may hand out a just-closed port again). */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}
