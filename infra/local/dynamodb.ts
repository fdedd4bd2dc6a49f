/**
 * The DynamoDB emulator for local runs and tests: moto in server mode (Apache-2.0, speaks the real
 * HTTP API including TransactWriteItems and condition expressions), installed from PyPI into a
 * project-local virtualenv on first use, listening on loopback only.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { PrerequisiteError } from '../../lib/errors';
import { translatingClient } from '../../lib/ledger/errors.dynamodb';
import { packageFile } from '../../lib/paths';
import { capOldLog, logLimits } from './logs';
import { LOOPBACK, choosePort, requireCommand, spawnService, waitUntil } from './process';

const REQUIREMENTS = packageFile('infra', 'local', 'dynamodb', 'requirements.txt');
/**
 * moto's server behind a launcher that patches it first (the patches/ package beside it, by purpose:
 * correctness, speed, verification); the launcher finds that package in its own directory.
 */
const LAUNCHER = packageFile('infra', 'local', 'dynamodb', 'moto_server.py');

export type DynamoOptions = { dir: string; cacheDir: string; ownerPid?: number; port?: string; startTimeoutMs?: number };
export type DynamoInstance = { endpoint: string; pid: number; watchdogPid?: number; logFile: string };

/** The emulator's files in its dir: its rotated log (requests, warnings) and its process output (start-up failures). */
export function dynamoLogFiles(dir: string): { log: string; output: string } {
  return { log: join(dir, 'moto.log'), output: join(dir, 'moto.stdout.log') };
}

/** Creates the virtualenv with moto once (keyed by the requirements file); returns its python. */
export function ensureMoto(cacheDir: string): string {
  const reqs = readFileSync(REQUIREMENTS, 'utf8');
  const key = createHash('sha256').update(reqs).digest('hex').slice(0, 12);
  const venv = join(cacheDir, `moto-venv-${key}`);
  const server = join(venv, 'bin', 'python');
  const marker = join(venv, '.complete');
  if (existsSync(marker)) return server;
  const python = process.env.PYTHON ?? 'python3';
  requireCommand(python, ['--version'], 'install Python 3 (Debian: apt-get install python3 python3-venv) or set PYTHON');
  rmSync(venv, { recursive: true, force: true });
  mkdirSync(cacheDir, { recursive: true });
  process.stderr.write('installing moto (DynamoDB emulator) into a virtualenv (first use only)...\n');
  const mk = spawnSync(python, ['-m', 'venv', venv], { encoding: 'utf8', timeout: 120_000 });
  if (mk.status !== 0) {
    throw new PrerequisiteError(`could not create a Python virtualenv (Debian: apt-get install python3-venv):\n${mk.stdout}${mk.stderr}`);
  }
  const pip = spawnSync(join(venv, 'bin', 'pip'), ['install', '--disable-pip-version-check', '-q', '-r', REQUIREMENTS], {
    encoding: 'utf8',
    timeout: 15 * 60_000,
  });
  if (pip.status !== 0) {
    rmSync(venv, { recursive: true, force: true });
    throw new PrerequisiteError(`pip could not install ${REQUIREMENTS}:\n${pip.stdout}${pip.stderr}`);
  }
  writeFileSync(marker, reqs);
  return server;
}

/** A DynamoDB client for the emulator (dummy credentials; moto ignores them). */
export function emulatorClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
}

/** True once the emulator answers ListTables; its failure otherwise, translated (callers waiting for it read it as not yet). */
export async function dynamoReady(endpoint: string, timeoutMs = 2000): Promise<boolean> {
  const client = emulatorClient(endpoint);
  try {
    const probe = translatingClient(client, { endpoint }, 'probe the DynamoDB emulator');
    await probe.send(new ListTablesCommand({}), { abortSignal: AbortSignal.timeout(timeoutMs) });
    return true;
  } finally {
    client.destroy();
  }
}

/** Starts moto_server on a loopback port; resolves once it answers DynamoDB ListTables. */
export async function startDynamo(opts: DynamoOptions): Promise<DynamoInstance> {
  const python = ensureMoto(opts.cacheDir);
  const port = await choosePort(opts.port, 'LOCAL_DYNAMODB_PORT');
  mkdirSync(opts.dir, { recursive: true });
  const files = dynamoLogFiles(opts.dir);
  const limits = logLimits();
  capOldLog(files.log, limits);
  capOldLog(files.output, limits);
  const svc = spawnService({
    cmd: python,
    args: [LAUNCHER, '-H', LOOPBACK, '-p', String(port)],
    // The launcher rotates its log by size (moto_server.py).
    env: {
      ...process.env,
      MOTO_LOG_FILE: files.log,
      MOTO_LOG_FILE_BYTES: String(limits.fileBytes),
      MOTO_LOG_FILES: String(limits.keptFiles),
    },
    logFile: files.output,
    ownerPid: opts.ownerPid,
  });
  const endpoint = `http://${LOOPBACK}:${port}`;
  await waitUntil('DynamoDB emulator (moto)', () => dynamoReady(endpoint), {
    timeoutMs: opts.startTimeoutMs ?? 60_000,
    intervalMs: 200,
    pid: svc.pid,
    logFile: files.output,
  });
  return { endpoint, pid: svc.pid, watchdogPid: svc.watchdogPid, logFile: files.log };
}
