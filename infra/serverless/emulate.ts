/**
 * `kafka-direct deploy --stage <s> --emulate`: the step before a real deploy. Packages the stage as
 * `deploy` does, with every stream reading from the local broker (as `npm start` does; the config's
 * brokers are the deployed stage's), creates the packaged stack in the local stack's CloudFormation
 * emulator and runs its functions from their zips under Lambda's runtime emulator and runtime client
 * (infra/local/lambda/), the planner on its schedule, until Ctrl-C. One line per invocation
 * (function, outcome, cold-start init, duration); the functions' own output goes to a log file.
 *
 * What it proves: the bundles load and run in Lambda's runtime with the template's handler, memory,
 * timeout, environment and concurrency, read-only task roots, the processor invoked through the
 * Lambda API. What it does not: IAM (the emulator allows everything), VPC and networking to the real
 * cluster, alarms, and Lambda's own scaling and timings.
 */
import { createWriteStream, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ValidationError } from '../../lib/errors';
import { CACHE_DIR, LOCAL_DIR } from '../local/stack/dirs';
import { upPersistent } from '../local/stack/persistent';
import { isolationMode } from '../local/lambda/emulator';
import { runPackagedStack } from '../local/lambda/run-packaged';
import type { InvocationRecord } from '../local/lambda/service';
import type { DeployOptions } from './deploy';

/** The config file with each stream's brokers replaced by the local broker's, beside it (relative handler paths still resolve). */
function localBrokersConfig(configFile: string, brokers: string): { file: string; remove(): void } {
  let raw: { streams?: Array<{ kafka?: Record<string, unknown> }> };
  try {
    raw = JSON.parse(readFileSync(configFile, 'utf8')) as typeof raw;
  } catch (e) {
    throw new ValidationError(`--config ${configFile}: not a JSON streams config (${(e as Error).message})`);
  }
  for (const s of raw.streams ?? []) s.kafka = { ...s.kafka, brokers: brokers.split(',') };
  const file = join(dirname(configFile), `.${basename(configFile, '.json')}.emulated-${process.pid}.json`);
  writeFileSync(file, JSON.stringify(raw, null, 2));
  return { file, remove: () => rmSync(file, { force: true }) };
}

/** One invocation as a line: `planner Event ok init 310 ms, 60012 ms`. */
export function invocationLine(r: InvocationRecord): string {
  const fn = r.function.split('-').pop();
  const init = r.initMs !== undefined ? ` init ${Math.round(r.initMs)} ms,` : '';
  const retry = r.attempt > 0 ? ` (retry ${r.attempt})` : '';
  return `${fn} ${r.type}${retry} ${r.outcome}${init} ${Math.round(r.durationMs ?? 0)} ms`;
}

/** Packages with `pack` (the deploy's osls package), then runs the stack locally until `stopped` resolves. */
export async function runEmulated(
  o: DeployOptions,
  env: NodeJS.ProcessEnv,
  pack: (o: DeployOptions, packageDir: string) => number,
  err: (s: string) => void,
  stopped: Promise<void>,
): Promise<number> {
  // As `npm start`: the services KAFKA_BROKERS and DYNAMODB_ENDPOINT name when both are set, else the local stack.
  const local =
    env.KAFKA_BROKERS && env.DYNAMODB_ENDPOINT
      ? { kafkaBrokers: env.KAFKA_BROKERS, dynamodbEndpoint: env.DYNAMODB_ENDPOINT }
      : await upPersistent((line) => err(`[local] ${line}\n`));
  const config = localBrokersConfig(o.configFile, local.kafkaBrokers);
  const dir = join(LOCAL_DIR, 'lambda', `${o.service}-${o.stage}`);
  // Not under the project's .serverless/: in the engine's own checkout that is osls's work folder.
  const packageDir = join(dir, 'package');
  let packaged: number;
  try {
    packaged = pack({ ...o, configFile: config.file }, packageDir);
  } finally {
    config.remove();
  }
  if (packaged !== 0) return packaged;
  const logFile = join(LOCAL_DIR, 'lambda', `${o.service}-${o.stage}.log`);
  const log = createWriteStream(logFile, { flags: 'a' });
  const run = await runPackagedStack({
    packageDir,
    stackName: `${o.service}-${o.stage}`,
    awsEndpoint: local.dynamodbEndpoint,
    region: o.region,
    dir: join(dir, 'run'),
    cacheDir: CACHE_DIR,
    onLine: (fn, line) => log.write(`${fn} ${line}\n`),
    onInvocation: (r) => err(`[emulate] ${invocationLine(r)}\n`),
  });
  err(
    `[emulate] stack ${run.stack.stackName} created in the local CloudFormation emulator; functions: ` +
      `${run.stack.functions.map((f) => `${f.name} (${f.memoryMb} MB, ${f.timeoutSec} s)`).join(', ')}; ` +
      `left out (not emulated): ${run.stack.leftOut.length} resources; ` +
      `${isolationMode() === 'none' ? 'task roots WRITABLE (no mount namespace allowed here)' : 'task roots read-only'}. ` +
      `Function output: ${logFile}. Ctrl-C stops.\n`,
  );
  await stopped;
  await run.stop();
  log.end();
  return 0;
}
