/**
 * One Lambda execution environment, locally: AWS's Runtime Interface Emulator running Node 22 with
 * AWS's Runtime Interface Client on a function's unzipped package, the way Lambda's nodejs22.x
 * runtime starts it (heap flags from the memory size, a clean environment with Lambda's variables).
 * Like a Lambda sandbox it serves one invocation at a time (a second concurrent invoke crashes the
 * emulator), initialises on its first invoke (a cold start) and again after a timeout.
 *
 * Isolation: in a mount namespace of its own, `/tmp` is a directory of this environment (Lambda's
 * `/tmp`) and the rest is read-only: the task root, the root file system and the file system holding
 * the task root (other mounts, such as /dev and /proc, stay as they are).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PrerequisiteError } from '../../../lib/errors';
import { freePort, LOOPBACK, portInUse, waitUntil } from '../process';
import { lambdaNodeFlags } from './node-flags';

/** A function as the template configures it, its package unzipped at `taskRoot`. */
export type FunctionSpec = {
  name: string;
  taskRoot: string;
  handler: string;
  memoryMb: number;
  timeoutSec: number;
  /** The template's environment variables (Lambda's own are added). */
  env: Record<string, string>;
  /** Reserved concurrency: at most this many environments (none: the local Lambda's cap). */
  reservedConcurrency?: number;
  /** Retries of a failed or timed-out `Event` invocation (the template's MaximumRetryAttempts; Lambda's default 2). */
  maxEventRetries: number;
};

/** The runtime's pieces (tools.ts), the region, and the variables every function gets locally (endpoints, credentials). */
export type RuntimeTools = { rie: string; ric: string; node: string; nodePath: string; region: string; localEnv: Record<string, string> };

export type Outcome = 'ok' | 'error' | 'timeout';

/** One invocation as the runtime reported it. */
export type InvokeResult = {
  outcome: Outcome;
  body: Buffer;
  /** The init this invocation waited for (a cold start: the emulator's `INIT REPORT`), if any. */
  initMs?: number;
  /** From the emulator's `REPORT` line. */
  durationMs?: number;
  /** The environment's Node runtime's peak resident set so far, in MB (`peakRssMb`). */
  peakRssMb?: number;
};

export type Emulator = {
  readonly id: number;
  /**
   * The environment's process group (its shell, the emulator and the runtime): `process.kill(-pid, 'SIGSTOP')`
   * freezes the environment as Lambda freezes a container between invocations, `SIGCONT` thaws it.
   */
  readonly pid: number;
  invoke(payload: Buffer): Promise<InvokeResult>;
  stop(): void;
};

/** How an environment is isolated here: a mount namespace as root, a user namespace otherwise, or nothing. */
let isolation: 'root' | 'user' | 'none' | undefined;

/** Whether an environment gets a /tmp of its own: not when the task root or the runtime's files are under /tmp. */
export function privateTmp(spec: Pick<FunctionSpec, 'taskRoot'>, tools: Pick<RuntimeTools, 'rie' | 'ric' | 'node' | 'nodePath'>): boolean {
  return ![spec.taskRoot, tools.rie, tools.ric, tools.node, tools.nodePath].some((p) => p === '/tmp' || p.startsWith('/tmp/'));
}

/** How environments are isolated on this machine (`none`: the task root stays writable). */
export function isolationMode(): 'root' | 'user' | 'none' {
  if (isolation) return isolation;
  const tryUnshare = (args: string[]) => spawnSync('unshare', [...args, 'true'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
  isolation = tryUnshare(['--mount', '--propagation', 'private'])
    ? 'root'
    : tryUnshare(['--mount', '--map-root-user', '--propagation', 'private'])
      ? 'user'
      : 'none';
  return isolation;
}

/** The variables Lambda sets for a function (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html). */
function lambdaEnv(spec: FunctionSpec, tools: RuntimeTools, id: number): Record<string, string> {
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    LANG: 'en_US.UTF-8',
    TZ: ':UTC',
    LAMBDA_TASK_ROOT: spec.taskRoot,
    LAMBDA_RUNTIME_DIR: join(tools.ric, '..'),
    NODE_PATH: tools.nodePath,
    AWS_REGION: tools.region,
    AWS_DEFAULT_REGION: tools.region,
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
    AWS_LAMBDA_FUNCTION_NAME: spec.name,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(spec.memoryMb),
    AWS_LAMBDA_FUNCTION_TIMEOUT: String(spec.timeoutSec),
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${spec.name}`,
    AWS_LAMBDA_LOG_STREAM_NAME: `local/[$LATEST]${String(id).padStart(8, '0')}`,
    ...tools.localEnv,
    ...spec.env,
  };
}

/**
 * The command line: the emulator and the runtime (Node with Lambda's flags, the runtime client, the
 * handler), inside a shell that stops it if this process dies, in a namespace where one is allowed.
 */
function commandLine(spec: FunctionSpec, tools: RuntimeTools, ports: { invoke: number; runtime: number }): string[] {
  const rie = [
    tools.rie,
    '--runtime-interface-emulator-address',
    `${LOOPBACK}:${ports.invoke}`,
    '--runtime-api-address',
    `${LOOPBACK}:${ports.runtime}`,
    tools.node,
    ...lambdaNodeFlags(spec.memoryMb),
    tools.ric,
    spec.handler,
  ];
  // The emulator ignores SIGTERM: when the owner is gone, the whole group (emulator, runtime) is killed.
  const watch = 'while kill -0 "$OWNER_PID" 2>/dev/null && kill -0 "$child" 2>/dev/null; do sleep 1; done; kill -KILL 0';
  // As in Lambda, only /tmp is writable: the task root, the root file system and the one holding the
  // task root (the project's, when it is a mount of its own) are remounted read-only in the namespace.
  // A project under /tmp (a checkout there) would vanish under a private /tmp: its environments then
  // share the machine's /tmp (kept writable as a mount of its own), and `privateTmp` says so.
  const own = privateTmp(spec, tools);
  const tmp = own ? 'mount --bind "$LOCAL_LAMBDA_TMP" /tmp && ' : 'mount --bind /tmp /tmp && ';
  // The file system holding the task root is made read-only too, unless that is the shared /tmp.
  const taskFs = own ? ' "$(findmnt -n -o TARGET -T "$(dirname "$LAMBDA_TASK_ROOT")")"' : '';
  // /tmp is mounted first: a task root under the shared /tmp would otherwise be hidden by its bind.
  const mounts =
    tmp +
    'mount --bind "$LAMBDA_TASK_ROOT" "$LAMBDA_TASK_ROOT" && mount -o remount,bind,ro "$LAMBDA_TASK_ROOT" && ' +
    `for m in /${taskFs}; do mount -o remount,bind,ro "$m" || exit 1; done && `;
  const mode = isolationMode();
  const script = `${mode === 'none' ? '' : mounts}"$@" & child=$!; ${watch}; wait "$child"`;
  const shell = ['bash', '-c', script, 'local-lambda', ...rie];
  if (mode === 'none') return shell;
  return ['unshare', '--mount', ...(mode === 'user' ? ['--map-root-user'] : []), '--propagation', 'private', '--', ...shell];
}

/** Starts an environment for `spec`; resolves once its invoke endpoint listens (its runtime starts on the first invoke). */
export async function startEmulator(
  spec: FunctionSpec,
  tools: RuntimeTools,
  o: { id: number; dir: string; onLine(line: string): void },
): Promise<Emulator> {
  const ports = { invoke: await freePort(), runtime: await freePort() };
  const tmpDir = join(o.dir, `tmp-${o.id}`);
  mkdirSync(tmpDir, { recursive: true });
  const env = { ...lambdaEnv(spec, tools, o.id), OWNER_PID: String(process.pid), LOCAL_LAMBDA_TMP: tmpDir };
  const [cmd, ...args] = commandLine(spec, tools, ports);
  const child = spawn(cmd!, args, { cwd: spec.taskRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new PrerequisiteError(`could not start the Lambda runtime emulator for ${spec.name}`);
  const lines = watchLines(child, o.onLine);
  await waitUntil(`the Lambda runtime emulator of ${spec.name}`, () => portInUse(ports.invoke), { timeoutMs: 20_000, pid: child.pid });
  return {
    id: o.id,
    pid: child.pid,
    invoke: async (payload) => {
      const res = await invokeOnce(ports.invoke, payload, lines);
      const peak = peakRssMb(child.pid as number);
      return peak === undefined ? res : { ...res, peakRssMb: peak };
    },
    stop: () => killGroup(child),
  };
}

/**
 * The peak resident set (MB) of the Node runtime among an environment's processes (the descendants
 * of its shell: the runtime emulator starts the runtime in a process group of its own), from Linux's
 * VmHWM: what Lambda reports as "Max Memory Used" and the runtime emulator does not measure (its
 * REPORT line repeats the memory size). Undefined where /proc cannot tell.
 */
function peakRssMb(root: number): number | undefined {
  const children = new Map<number, number[]>();
  const read = (path: string) => {
    try {
      return readFileSync(path, 'utf8');
    } catch {
      return undefined; // the process ended while it was looked at
    }
  };
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return undefined;
  }
  for (const pid of entries) {
    const stat = read(`/proc/${pid}/stat`);
    // After the command's closing parenthesis: state, ppid, ...
    const ppid = stat === undefined ? NaN : Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (Number.isInteger(ppid)) children.set(ppid, [...(children.get(ppid) ?? []), Number(pid)]);
  }
  let peakKb: number | undefined;
  for (const queue = [root]; queue.length;) {
    const pid = queue.shift() as number;
    queue.push(...(children.get(pid) ?? []));
    if (read(`/proc/${pid}/comm`)?.trim() !== 'node') continue;
    const hwm = /VmHWM:\s+(\d+) kB/.exec(read(`/proc/${pid}/status`) ?? '');
    if (hwm) peakKb = Math.max(peakKb ?? 0, Number(hwm[1]));
  }
  return peakKb === undefined ? undefined : Math.round(peakKb / 1024);
}

type LineTap = { since(): () => string[] };

/** Every output line goes to `onLine`; `since()` marks a point and returns a reader of the lines after it. */
function watchLines(child: ChildProcess, onLine: (line: string) => void): LineTap {
  const all: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    createInterface({ input: stream }).on('line', (line) => {
      all.push(line);
      if (all.length > 2000) all.splice(0, 1000);
      onLine(line);
    });
  }
  return {
    since() {
      const mark = all.length;
      const first = all[mark - 1];
      return () => {
        // Trimmed meanwhile: find the mark again by content (lines are timestamped).
        const at = all[mark - 1] === first ? mark : all.indexOf(first ?? '') + 1;
        return all.slice(at);
      };
    },
  };
}

function killGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

const TIMED_OUT = /^Task timed out after/;

/** One invoke: the answer, then the emulator's REPORT line for it; the outcome from both. */
async function invokeOnce(port: number, payload: Buffer, tap: LineTap): Promise<InvokeResult> {
  const after = tap.since();
  const res = await fetch(`http://${LOOPBACK}:${port}/2015-03-31/functions/function/invocations`, { method: 'POST', body: payload });
  const body = Buffer.from(await res.arrayBuffer());
  // The REPORT line follows the answer within milliseconds; the outcome does not depend on it.
  const deadline = Date.now() + 2_000;
  while (!after().some((l) => l.startsWith('REPORT RequestId:')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  const lines = after();
  const initLine = lines.find((l) => l.includes('INIT REPORT(durationMs:'));
  const report = lines.find((l) => l.startsWith('REPORT RequestId:'));
  const initMs = initLine ? Number(/durationMs: ([\d.]+)/.exec(initLine)?.[1]) : undefined;
  const durationMs = report ? Number(/\tDuration: ([\d.]+) ms/.exec(report)?.[1]) : undefined;
  return {
    outcome: outcomeOf(res.status, body, lines),
    body,
    ...(initMs !== undefined && { initMs }),
    ...(durationMs !== undefined && { durationMs }),
  };
}

/**
 * The emulator answers 200 to a handler's error too (with the runtime's error document), and a timeout
 * with plain text; the runtime client logs `Invoke Error` when it reports a handler's error.
 */
function outcomeOf(status: number, body: Buffer, lines: string[]): Outcome {
  const text = body.toString('utf8');
  if (TIMED_OUT.test(text)) return 'timeout';
  if (status !== 200) return 'error';
  if (lines.some((l) => /\tERROR\t(Invoke|Init) Error /.test(l) || /\tERROR\tUncaught Exception/.test(l))) return 'error';
  return 'ok';
}
