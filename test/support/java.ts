/**
 * Kafka's own Java client as a test oracle: `RecordTool.java` (produce records described by JSON
 * lines, or consume a range and print JSON lines) compiled on first use against the broker's jars
 * into `.local/java/<hash of the source>/`, so a changed source recompiles and an unchanged one
 * costs nothing.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { ensureKafkaJars } from '../../infra/local/kafka';
import { CACHE_DIR } from '../../infra/local/stack/dirs';
import { LOCAL_ROOT } from '../../lib/local/paths';

const SOURCE = join(__dirname, 'java', 'RecordTool.java');
/** The jars RecordTool compiles against; a narrow compile classpath halves javac's time (runs get them all). */
const COMPILE_JARS = /^(kafka-clients|jackson-databind|jackson-core|jackson-annotations)-\d[^/]*\.jar$/;

/** One record for `produce`: text fields as UTF-8, `...Base64` fields as bytes; absent or null is null. */
export type JavaProducedRecord = {
  topic?: string;
  partition?: number;
  compression?: 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';
  timestampMs?: number;
  key?: string | null;
  keyBase64?: string | null;
  value?: string | null;
  valueBase64?: string | null;
  headers?: Array<{ key: string; value?: string | null; valueBase64?: string | null }>;
};

/** One record as Java's KafkaConsumer returned it (bytes as base64, null kept). */
export type JavaConsumedRecord = {
  topic: string;
  partition: number;
  offset: number;
  timestampMs: number;
  timestampType: 'CreateTime' | 'LogAppendTime';
  keyBase64: string | null;
  valueBase64: string | null;
  headers: Array<{ key: string; valueBase64: string | null }>;
};

let classpath: string | undefined;

/** Compiles RecordTool once per source version; throws a one-line error when javac is missing. */
export function recordToolClasspath(): string {
  if (classpath) return classpath;
  const libs = ensureKafkaJars(CACHE_DIR);
  const flags = ['-nowarn', '-proc:none', '-implicit:none'];
  const hash = createHash('sha256').update(readFileSync(SOURCE)).update(flags.join(' ')).digest('hex').slice(0, 16);
  const out = join(LOCAL_ROOT, 'java', `record-tool-${hash}`);
  if (!existsSync(join(out, 'RecordTool.class'))) {
    const javac = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'javac') : 'javac';
    const tmp = `${out}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    const compileClasspath = readdirSync(libs)
      .filter((f) => COMPILE_JARS.test(f))
      .map((f) => join(libs, f))
      .join(delimiter);
    const res = spawnSync(javac, [...flags, '-d', tmp, '-cp', compileClasspath, SOURCE], { encoding: 'utf8' });
    if (res.error)
      throw new Error(`javac not found (${res.error.message}): install a JDK 17+ (Debian: openjdk-17-jdk-headless) or set JAVA_HOME`);
    if (res.status !== 0) throw new Error(`javac failed on ${SOURCE}:\n${res.stderr}`);
    rmSync(out, { recursive: true, force: true });
    renameSync(tmp, out); // last, so an interrupted compilation never looks complete
  }
  classpath = [out, join(libs, '*')].join(delimiter);
  return classpath;
}

function runTool(args: string[], input: string): Promise<string> {
  const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
  const child = spawn(
    java,
    ['-Xss1m', '-XX:TieredStopAtLevel=1', '-Dlog4j2.level=ERROR', '-cp', recordToolClasspath(), 'RecordTool', ...args],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => stdout.push(b));
  child.stderr.on('data', (b: Buffer) => stderr.push(b));
  child.stdin.end(input);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(stdout).toString('utf8'));
      else reject(new Error(`RecordTool ${args[0]} exited with ${code}:\n${Buffer.concat(stderr).toString('utf8').slice(-4000)}`));
    });
  });
}

/** Sends `records` with Kafka's Java producer (acks=all, one producer per codec); resolves once all are acknowledged. */
export async function javaProduce(brokers: string, records: JavaProducedRecord[], props: Record<string, string> = {}): Promise<void> {
  const args = ['produce', '--bootstrap', brokers];
  for (const [k, v] of Object.entries(props)) args.push('--prop', `${k}=${v}`);
  await runTool(args, records.map((r) => JSON.stringify(r)).join('\n'));
}

/** What `produce-accounts` wrote: the records sent and, per account, `[total, count]`. */
export type ProducedAccounts = { sent: number; totals: Record<string, [number, number]> };

/**
 * Sends `records` keyed JSON records `{"account","amount","pad"}` of about `sizeBytes` over `accounts`
 * accounts with Kafka's Java producer (paced at `ratePerSec` when given); resolves with what a
 * running-totals sink must hold account by account.
 */
export async function javaProduceAccounts(
  brokers: string,
  opts: { topic: string; records: number; accounts: number; sizeBytes?: number; seed?: number; ratePerSec?: number },
): Promise<ProducedAccounts> {
  const args = ['produce-accounts', '--bootstrap', brokers, '--topic', opts.topic];
  args.push('--records', String(opts.records), '--accounts', String(opts.accounts));
  if (opts.sizeBytes !== undefined) args.push('--size', String(opts.sizeBytes));
  if (opts.seed !== undefined) args.push('--seed', String(opts.seed));
  if (opts.ratePerSec !== undefined) args.push('--rate-per-sec', String(opts.ratePerSec));
  const out = await runTool(args, '');
  return JSON.parse(out.trim().split('\n').at(-1) ?? '') as ProducedAccounts;
}

/** Reads `[from, until)` of each partition with Kafka's Java consumer (assign + seek). */
export async function javaConsume(
  brokers: string,
  ranges: Array<{ topic: string; partition: number; from: number; until: number }>,
  isolation: 'read_committed' | 'read_uncommitted' = 'read_uncommitted',
): Promise<JavaConsumedRecord[]> {
  const args = ['consume', '--bootstrap', brokers, '--isolation', isolation];
  for (const r of ranges) args.push('--assign', `${r.topic}:${r.partition}:${r.from}:${r.until}`);
  const out = await runTool(args, '');
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as JavaConsumedRecord);
}

/**
 * Joins consumer group `group` with Kafka's Java consumer (subscribe), consumes each partition of
 * `commits` up to its offset and commits exactly those offsets as a member of the group.
 */
export async function javaGroupCommit(brokers: string, group: string, topic: string, commits: Record<number, number>): Promise<void> {
  const args = ['group-commit', '--bootstrap', brokers, '--group', group, '--topic', topic];
  for (const [partition, offset] of Object.entries(commits)) args.push('--commit', `${partition}:${offset}`);
  await runTool(args, '');
}
