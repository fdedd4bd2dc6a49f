/** Runs `sls package` (osls, offline) and cfn-lint for the deploy tests. */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(__dirname, '..', '..');
const SLS = join(ROOT, 'node_modules', 'osls', 'bin', 'serverless.js');
const CFN_LINT = join(ROOT, 'scripts', 'cfn-lint.sh');
const CHECKOV = join(ROOT, 'scripts', 'checkov.sh');

/**
 * W3005: osls adds `DependsOn: <role>` to a function whose `Role` already is `Fn::GetAtt <role>.Arn`;
 * redundant, harmless, and not ours to change.
 */
export const CFN_LINT_IGNORED = ['W3005'];

export type CfnResource = { Type: string; Properties: Record<string, unknown>; [attribute: string]: unknown };
export type Template = { Resources: Record<string, CfnResource>; Outputs?: Record<string, unknown> };
export type Packaged = { dir: string; templatePath: string; template: Template; log: string; ms: number };

/** Offline: dummy credentials, no profile, no telemetry. */
function offlineEnv(region: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AWS_ACCESS_KEY_ID: 'x',
    AWS_SECRET_ACCESS_KEY: 'x',
    AWS_REGION: region,
    SLS_TELEMETRY_DISABLED: '1',
  };
  for (const name of ['AWS_PROFILE', 'AWS_DEFAULT_PROFILE', 'AWS_SESSION_TOKEN', 'STREAMS_CONFIG', 'LEDGER_TABLE']) delete env[name];
  return env;
}

/**
 * osls bundles into the service's one `.esbuild/` work folder, and empties it when it starts: two
 * `sls` commands at once (jest runs test files in two workers) delete each other's files. Every
 * `sls` command of these tests holds this lock, one per checkout, while it runs. Hand-written:
 * a directory created atomically, the holder's pid inside; no dependency of the project locks files.
 */
const SLS_LOCK = join(tmpdir(), `kafka-direct-sls-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}.lock`);
const SLS_LOCK_WAIT_MS = 10 * 60_000;

function withSlsLock<T>(run: () => T): T {
  const deadline = Date.now() + SLS_LOCK_WAIT_MS;
  for (;;) {
    try {
      mkdirSync(SLS_LOCK);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      if (lockHolderGone()) rmSync(SLS_LOCK, { recursive: true, force: true });
      else if (Date.now() > deadline)
        throw new Error(`another sls command held ${SLS_LOCK} for over ${SLS_LOCK_WAIT_MS / 60_000} minutes`, { cause: e });
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    writeFileSync(join(SLS_LOCK, 'pid'), String(process.pid));
    return run();
  } finally {
    rmSync(SLS_LOCK, { recursive: true, force: true });
  }
}

/** Whether the lock's holder has exited without releasing it (killed), so the lock may be taken. */
function lockHolderGone(): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(SLS_LOCK, 'pid'), 'utf8'));
  } catch {
    // Created, its pid not written yet: gone only if that was long ago.
    try {
      return Date.now() - statSync(SLS_LOCK).mtimeMs > 60_000;
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

export type PackageRun = { dir: string; status: number | null; stdout: string; stderr: string; error?: Error };

/** `sls package --stage <stage>` into a fresh temporary directory, as it ends (success or not). */
export function runSlsPackage(stage: string, region: string, params: Record<string, string> = {}): PackageRun {
  const dir = mkdtempSync(join(tmpdir(), `sls-package-${stage}-`));
  const args = [SLS, 'package', '--stage', stage, '--region', region, '--package', dir];
  for (const [name, value] of Object.entries(params)) args.push('--param', `${name}=${value}`);
  const run = withSlsLock(() =>
    spawnSync(process.execPath, args, { cwd: ROOT, env: offlineEnv(region), encoding: 'utf8', timeout: 180_000 }),
  );
  return { dir, status: run.status, stdout: run.stdout ?? '', stderr: run.stderr ?? '', error: run.error };
}

/** `sls package --stage <stage>` into a fresh temporary directory; throws with osls's output on failure. */
export function slsPackage(stage: string, region: string, params: Record<string, string> = {}): Packaged {
  const started = Date.now();
  const run = runSlsPackage(stage, region, params);
  const { dir } = run;
  const log = `${run.stdout}${run.stderr}`;
  if (run.status !== 0) throw new Error(`sls package --stage ${stage} failed (${run.error?.message ?? `exit ${run.status}`}):\n${log}`);
  const templatePath = join(dir, 'cloudformation-template-update-stack.json');
  return { dir, templatePath, template: JSON.parse(readFileSync(templatePath, 'utf8')) as Template, log, ms: Date.now() - started };
}

/**
 * `sls invoke local --stage local -f <fn> --data <payload>` (offline, unreachable endpoints); returns the
 * exit status and the JSON osls prints last (the handler's result or error).
 */
export function slsInvokeLocal(
  fn: string,
  payload: unknown,
  env: NodeJS.ProcessEnv,
): { status: number | null; result: unknown; log: string } {
  const run = withSlsLock(() =>
    spawnSync(process.execPath, [SLS, 'invoke', 'local', '--stage', 'local', '-f', fn, '--data', JSON.stringify(payload)], {
      cwd: ROOT,
      env: { ...offlineEnv('us-east-1'), DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', POWERTOOLS_METRICS_DISABLED: 'true', ...env },
      encoding: 'utf8',
      timeout: 120_000,
    }),
  );
  const log = `${run.stdout ?? ''}${run.stderr ?? ''}`;
  const start = run.stdout.lastIndexOf('\n{');
  let result: unknown;
  try {
    result = JSON.parse(start >= 0 ? run.stdout.slice(start + 1) : run.stdout);
  } catch {
    throw new Error(`sls invoke local -f ${fn} printed no JSON result (exit ${run.status}):\n${log}`);
  }
  return { status: run.status, result, log };
}

/** cfn-lint (pinned, project-local virtualenv) on a template; installs it on first use. */
export function cfnLint(templatePath: string, region: string): { status: number | null; output: string } {
  const run = spawnSync('bash', [CFN_LINT, '--regions', region, '--ignore-checks', ...CFN_LINT_IGNORED, '--', templatePath], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 300_000,
  });
  return { status: run.status, output: `${run.stdout ?? ''}${run.stderr ?? ''}${run.error ? `\n${run.error.message}` : ''}` };
}

export type CheckovFinding = { checkId: string; resource: string; comment?: string };
export type CheckovReport = { passed: number; failed: CheckovFinding[]; skipped: CheckovFinding[] };

type CheckovJson = {
  summary: { passed: number };
  results: {
    failed_checks: Array<{ check_id: string; resource: string }>;
    skipped_checks: Array<{ check_id: string; resource: string; check_result?: { suppress_comment?: string } }>;
  };
};

/**
 * checkov (pinned, project-local virtualenv) on a CloudFormation template; installs it on first use.
 * `--skip-download`: nothing is fetched from checkov's platform (its guidelines need an account).
 */
export function checkov(templatePath: string): CheckovReport {
  const run = spawnSync('bash', [CHECKOV, '--framework', 'cloudformation', '--file', templatePath, '--skip-download', '--output', 'json'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 300_000,
  });
  // Exit 1 means "some check failed"; anything else without a report is checkov itself failing.
  let report: CheckovJson;
  try {
    report = JSON.parse(run.stdout) as CheckovJson;
  } catch {
    throw new Error(
      `checkov printed no report (exit ${run.status}${run.error ? `, ${run.error.message}` : ''}):\n${run.stdout}${run.stderr}`,
    );
  }
  return {
    passed: report.summary.passed,
    failed: report.results.failed_checks.map((c) => ({ checkId: c.check_id, resource: c.resource })),
    skipped: report.results.skipped_checks.map((c) => ({
      checkId: c.check_id,
      resource: c.resource,
      comment: c.check_result?.suppress_comment,
    })),
  };
}
