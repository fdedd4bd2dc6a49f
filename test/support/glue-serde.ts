/**
 * AWS's Glue Schema Registry serializer (software.amazon.glue:schema-registry-serde, Java) as the test
 * producer of Glue-framed records: `GlueSerdeTool.java` compiled on first use against the serde's jars
 * (resolved with Maven into `.local/cache/glue-serde-<version>/libs`, like the broker's), pointed at
 * the local stack's emulator. The serializer registers each schema version itself, as a producer with
 * auto-registration does.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { CACHE_DIR } from '../../infra/local/stack/dirs';
import { LOCAL_ROOT } from '../../lib/local/paths';

const SOURCE = join(__dirname, 'java', 'GlueSerdeTool.java');
const POM = join(__dirname, 'java', 'glue-serde', 'pom.xml');

/** One value to serialize (see GlueSerdeTool.java for each format's `value`). */
export type GlueSerdeInput = {
  format: 'AVRO' | 'JSON' | 'PROTOBUF';
  schemaName: string;
  schema: string;
  value: unknown;
  /** PROTOBUF: the full name of the message type of `value`. */
  message?: string;
  compression?: 'NONE' | 'ZLIB';
};

function serdeVersion(): string {
  const m = /<glue\.serde\.version>([^<]+)</.exec(readFileSync(POM, 'utf8'));
  if (!m) throw new Error(`no glue.serde.version in ${POM}`);
  return m[1]!;
}

/** The serde's jars, resolved once with Maven. */
function ensureSerdeJars(): string {
  const libs = join(CACHE_DIR, `glue-serde-${serdeVersion()}`, 'libs');
  if (existsSync(libs) && readdirSync(libs).some((f) => f.startsWith('schema-registry-serde-'))) return libs;
  const tmp = `${libs}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const res = spawnSync('mvn', ['-B', '-q', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${tmp}`], {
    encoding: 'utf8',
    timeout: 15 * 60_000,
  });
  if (res.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`Maven could not resolve the Glue serde: ${res.error ?? `${res.stdout}${res.stderr}`.slice(-2000)}`);
  }
  rmSync(libs, { recursive: true, force: true });
  renameSync(tmp, libs);
  return libs;
}

let classpath: string | undefined;

function toolClasspath(): string {
  if (classpath) return classpath;
  const libs = ensureSerdeJars();
  const hash = createHash('sha256').update(readFileSync(SOURCE)).update(serdeVersion()).digest('hex').slice(0, 16);
  const out = join(LOCAL_ROOT, 'java', `glue-serde-tool-${hash}`);
  const jars = join(libs, '*');
  if (!existsSync(join(out, 'GlueSerdeTool.class'))) {
    const javac = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'javac') : 'javac';
    const tmp = `${out}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    const res = spawnSync(javac, ['-nowarn', '-proc:none', '-d', tmp, '-cp', jars, SOURCE], { encoding: 'utf8' });
    if (res.status !== 0) throw new Error(`javac failed on ${SOURCE}:\n${res.error ?? res.stderr}`);
    rmSync(out, { recursive: true, force: true });
    renameSync(tmp, out);
  }
  classpath = [out, jars].join(delimiter);
  return classpath;
}

/** Serializes `values` with the Glue serializer against the registry at `endpoint`; one Buffer per value, in order. */
export async function glueSerialize(
  registry: { endpoint: string; region: string; registryName: string },
  values: readonly GlueSerdeInput[],
): Promise<Buffer[]> {
  const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
  const args = ['-XX:TieredStopAtLevel=1', '-cp', toolClasspath(), 'GlueSerdeTool'];
  args.push('--endpoint', registry.endpoint, '--region', registry.region, '--registry', registry.registryName);
  // The emulator takes any credentials; the SDK's default chain reads these.
  const env = { ...process.env, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', AWS_REGION: registry.region };
  const child = spawn(java, args, { stdio: ['pipe', 'pipe', 'pipe'], env });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => stdout.push(b));
  child.stderr.on('data', (b: Buffer) => stderr.push(b));
  child.stdin.end(values.map((v) => JSON.stringify(v)).join('\n'));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  if (code !== 0) throw new Error(`GlueSerdeTool exited with ${code}:\n${Buffer.concat(stderr).toString('utf8').slice(-4000)}`);
  return Buffer.concat(stdout)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => Buffer.from((JSON.parse(l) as { base64: string }).base64, 'base64'));
}
