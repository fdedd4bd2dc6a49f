/**
 * A Confluent-compatible schema registry for local runs and tests: Apicurio Registry (Apache-2.0),
 * whose `/apis/ccompat/v7` API is Confluent Schema Registry's REST API (subjects, versions, schema
 * ids, compatibility), for Avro, Protobuf and JSON Schema, kept in an in-memory H2 database.
 *
 * Maven Central has the registry's application jar but no runnable form of it, so
 * infra/local/registry/pom.xml runs the registry's own Quarkus build on that jar into the cache on
 * first use (about a minute; `npm run local:prepare` does it ahead). The registry is not part of
 * every stack: it costs ~250 MB and 7-12 s of start on two cores, so `local:up --registry` and the
 * tests that need one (test/support/registry.ts) start it.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PrerequisiteError } from '../../lib/errors';
import { packageFile } from '../../lib/paths';
import { javaBinary } from './kafka';
import { capOldLog, logLimits } from './logs';
import { isOurService } from './ownership';
import { LOOPBACK, choosePort, portInUse, requireCommand, spawnService, stopProcess, waitUntil } from './process';
import { withStackLock } from './stack-lock';

const PROJECT = packageFile('infra', 'local', 'registry');
const POM = join(PROJECT, 'pom.xml');
const SOURCES = join(PROJECT, 'src', 'main', 'java', 'local', 'stack', 'registry');

/** A string in the registry's command line (what the stack's ownership checks look for). */
export const REGISTRY_MARKER = 'schema-registry-local';

/** The path of Confluent's API on the registry: clients take `http://host:port/apis/ccompat/v7` as the registry URL. */
const CCOMPAT_PATH = '/apis/ccompat/v7';

/** A user the registry asks for with HTTP basic authentication. */
export type RegistryUser = { username: string; password: string };

export type RegistryOptions = {
  /** Directory for this instance's config and logs. */
  dir: string;
  /** Cache directory for the built registry (shared by all instances). */
  cacheDir: string;
  /** Watchdog owner: the registry dies when this process dies. */
  ownerPid?: number;
  /** Fixed port (else a free one is chosen). */
  port?: string;
  /** Every request but the health checks needs these credentials (HTTP basic); default none needed. */
  basicAuth?: RegistryUser;
  /** JVM max heap. Default 256m. */
  heap?: string;
  startTimeoutMs?: number;
};

export type RegistryInstance = {
  /** The Confluent-compatible base URL (what a Confluent client takes as its host). */
  url: string;
  pid: number;
  watchdogPid?: number;
  logFile: string;
  basicAuth?: RegistryUser;
};

/** The Apicurio version pinned in the pom. */
function apicurioVersion(): string {
  const m = /<apicurio\.version>([^<]+)<\/apicurio\.version>/.exec(readFileSync(POM, 'utf8'));
  if (!m?.[1]) throw new PrerequisiteError(`no <apicurio.version> in ${POM}`);
  return m[1];
}

/** What the build depends on: the pom and the Java sources beside it. */
function buildKey(): string {
  const hash = createHash('sha256').update(readFileSync(POM));
  for (const f of readdirSync(SOURCES).sort()) hash.update(f).update(readFileSync(join(SOURCES, f)));
  return hash.digest('hex').slice(0, 12);
}

/** Builds the runnable registry with Maven into `cacheDir` once (keyed by the pom and sources); returns its runner jar. */
export function ensureRegistryBuild(cacheDir: string): string {
  const out = join(cacheDir, `schema-registry-${apicurioVersion()}-${buildKey()}`);
  const jar = join(out, `${REGISTRY_MARKER}-1-runner.jar`);
  if (existsSync(jar)) return jar;
  requireCommand('mvn', ['-v'], 'install Maven (Debian: apt-get install maven) to build the schema registry');
  const tmp = `${out}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(cacheDir, { recursive: true });
  process.stderr.write(`building Apicurio Registry ${apicurioVersion()} with Maven (first use only)...\n`);
  // -DskipDefault leaves out the repositories Apicurio's parent pom adds: only Maven Central is used.
  const res = spawnSync('mvn', ['-B', '-q', '-DskipDefault', '-f', POM, 'package', `-Dregistry.buildDir=${tmp}`], {
    encoding: 'utf8',
    timeout: 20 * 60_000,
  });
  if (res.status !== 0 || !existsSync(join(tmp, `${REGISTRY_MARKER}-1-runner.jar`))) {
    rmSync(tmp, { recursive: true, force: true });
    const why = res.error ? String(res.error) : `${res.stdout}${res.stderr}`.trim().split('\n').slice(-15).join('\n');
    throw new PrerequisiteError(`Maven could not build the schema registry (${POM}):\n${why}`);
  }
  // Only the runnable jar and its libraries are kept; rename last so an interrupted build never looks complete.
  for (const entry of readdirSync(tmp)) {
    if (entry !== 'lib' && entry !== `${REGISTRY_MARKER}-1-runner.jar`) rmSync(join(tmp, entry), { recursive: true, force: true });
  }
  rmSync(out, { recursive: true, force: true });
  renameSync(tmp, out);
  return jar;
}

/**
 * The registry's runtime settings (pure; exported for tests): loopback only, BACKWARD compatibility
 * by default as Confluent's registry has, and its log in one size-rotated file. With `basicAuth`,
 * the one user every request but the health checks must present (BasicAuthPolicy.java).
 */
export function registryProperties(port: number, logFile: string, limits = logLimits(), basicAuth?: RegistryUser): string {
  const props: Record<string, string | number> = {
    'quarkus.http.host': LOOPBACK,
    'quarkus.http.port': port,
    'registry.rules.global.compatibility': 'BACKWARD',
    'quarkus.log.console.enable': 'false',
    'quarkus.log.file.enable': 'true',
    'quarkus.log.file.path': logFile,
    'quarkus.log.file.rotation.max-file-size': `${Math.max(1, Math.round(limits.fileBytes / 1024))}K`,
    'quarkus.log.file.rotation.max-backup-index': limits.keptFiles,
    // Apicurio's client for error reports: nothing to report to here.
    'quarkus.log.category."io.sentry".level': 'ERROR',
  };
  if (basicAuth) {
    if (!/^[A-Za-z0-9._-]+$/.test(basicAuth.username)) {
      throw new PrerequisiteError(`schema registry user ${JSON.stringify(basicAuth.username)} must be letters, digits, '.', '_' or '-'`);
    }
    props['local.registry.basic-auth'] = 'true';
    props['quarkus.security.users.embedded.plain-text'] = 'true';
    props[`quarkus.security.users.embedded.users.${basicAuth.username}`] = basicAuth.password.replace(/\\/g, '\\\\');
  }
  return Object.entries(props)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
}

/** The Authorization header value for `user`. */
export function basicAuthHeader(user: RegistryUser): string {
  return `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}`;
}

/** True once the registry's Confluent API answers a subject listing (with the instance's credentials). */
export async function registryReady(url: string, basicAuth?: RegistryUser, timeoutMs = 2000): Promise<boolean> {
  const res = await fetch(`${url}/subjects`, {
    headers: basicAuth ? { authorization: basicAuthHeader(basicAuth) } : {},
    signal: AbortSignal.timeout(timeoutMs),
  });
  await res.body?.cancel();
  return res.ok;
}

/** How often a start on a chosen (not fixed) port is tried when the registry exits during start-up. */
const START_ATTEMPTS = 3;

/**
 * Starts the registry on a loopback port; resolves once its Confluent API answers. A registry that
 * exits during start-up on a port chosen here is started again on another: the port was free when
 * chosen, but another service of a busy test run can bind it before Quarkus does (seen once in CI).
 */
export async function startRegistry(opts: RegistryOptions): Promise<RegistryInstance> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startRegistryOnce(opts);
    } catch (err) {
      const exited = err instanceof PrerequisiteError && /exited during start-up/.test(err.message);
      if (!exited || opts.port !== undefined || process.env.LOCAL_REGISTRY_PORT || attempt >= START_ATTEMPTS) throw err;
    }
  }
}

async function startRegistryOnce(opts: RegistryOptions): Promise<RegistryInstance> {
  const java = javaBinary();
  const jar = ensureRegistryBuild(opts.cacheDir);
  const port = await choosePort(opts.port, 'LOCAL_REGISTRY_PORT');
  // Quarkus reads config/application.properties from its working directory: the credentials stay out of the command line.
  mkdirSync(join(opts.dir, 'config'), { recursive: true });
  const logFile = join(opts.dir, 'registry.log');
  const stdoutFile = join(opts.dir, 'registry.stdout.log');
  const limits = logLimits();
  capOldLog(logFile, limits);
  capOldLog(stdoutFile, limits);
  writeFileSync(join(opts.dir, 'config', 'application.properties'), registryProperties(port, logFile, limits, opts.basicAuth), {
    mode: 0o600,
  });
  const heap = opts.heap ?? '256m';
  const svc = spawnService({
    cmd: java,
    // The serial collector and a small heap: a registry of a few test schemas needs no more.
    args: [`-Xmx${heap}`, '-XX:+UseSerialGC', '-Djava.awt.headless=true', '-jar', jar],
    cwd: opts.dir,
    logFile: stdoutFile,
    ownerPid: opts.ownerPid,
  });
  const url = `http://${LOOPBACK}:${port}${CCOMPAT_PATH}`;
  try {
    await waitUntil('schema registry (Apicurio)', () => registryReady(url, opts.basicAuth), {
      timeoutMs: opts.startTimeoutMs ?? 90_000,
      intervalMs: 250,
      pid: svc.pid,
      logFile: stdoutFile,
    });
  } catch (err) {
    await stopRegistry({ url, pid: svc.pid, watchdogPid: svc.watchdogPid, logFile });
    throw err;
  }
  return { url, pid: svc.pid, watchdogPid: svc.watchdogPid, logFile, basicAuth: opts.basicAuth };
}

/** Stops the registry with SIGTERM (SIGKILL after `graceMs`), then its watchdog. */
export async function stopRegistry(instance: RegistryInstance, graceMs = 10_000): Promise<void> {
  await stopProcess(instance.pid, graceMs);
  if (instance.watchdogPid) await stopProcess(instance.watchdogPid, 1000);
}

/** Where a registry records itself in its dir (read by the next caller and by whoever stops it). */
const stateFile = (dir: string): string => join(dir, 'registry.json');

const portOf = (url: string): number => Number(new URL(url).port);

/** The registry recorded in `dir`, if any. */
export function readRegistryState(dir: string): RegistryInstance | undefined {
  try {
    return JSON.parse(readFileSync(stateFile(dir), 'utf8')) as RegistryInstance;
  } catch {
    return undefined;
  }
}

/** True while the recorded registry's pid is still that registry (not a reused pid). */
function isOurs(r: RegistryInstance): boolean {
  return isOurService({ pid: r.pid, port: portOf(r.url), marker: REGISTRY_MARKER });
}

/**
 * The registry recorded in `opts.dir` when it is still ours and answers, else a new one recorded
 * there (on the old port when it is free): one caller at a time per dir, so test files running at
 * once share one registry. `started` says which.
 */
export async function ensureRegistry(opts: RegistryOptions): Promise<{ instance: RegistryInstance; started: boolean }> {
  return withStackLock(opts.dir, 'started', async () => {
    const prev = readRegistryState(opts.dir);
    if (prev && isOurs(prev)) {
      if (await registryReady(prev.url, prev.basicAuth, 10_000).catch(() => false)) return { instance: prev, started: false };
      await stopRegistry(prev);
    }
    const oldPort = prev && !(await portInUse(portOf(prev.url))) ? String(portOf(prev.url)) : undefined;
    const instance = await startRegistry({ ...opts, port: opts.port ?? oldPort });
    writeFileSync(stateFile(opts.dir), JSON.stringify(instance, null, 2), { mode: 0o600 });
    return { instance, started: true };
  });
}

/** Stops the registry recorded in `dir` (only if it is still ours) and forgets it; false when none ran. */
export async function stopRecordedRegistry(dir: string): Promise<boolean> {
  if (!existsSync(stateFile(dir))) return false;
  return withStackLock(dir, 'stopped', async () => {
    const prev = readRegistryState(dir);
    const ran = prev !== undefined && isOurs(prev);
    // A dead registry's watchdog ends by itself; its recorded pid may be another process's by now.
    if (ran) await stopRegistry(prev);
    rmSync(stateFile(dir), { force: true });
    return ran;
  });
}
