/**
 * `npm run bench:planner-memory`: what the planner needs, in memory and CPU, at 10 and 1,000 busy
 * partitions (the default `--sizes 1x10,10x100`: topics x partitions), to size its Lambda memory.
 * The deployed planner handler is bundled with esbuild as `sls package` bundles it and run on plain
 * Node in a child process (bench/planner-memory/child.ts), invoked on its schedule for
 * `--run-ms` with a 1 s trigger, under the heap limits Lambda's Node.js runtime sets for `--memory-mb`; every second one record goes to every partition, and the ranges it
 * dispatches are processed here, as Lambda would run them elsewhere. Per size: the child's peak
 * resident set and heap (a Lambda function's "Max Memory Used" is its process's resident set, and
 * `withinMemory` compares it with `--memory-mb`), its CPU time per warm tick that planned every
 * partition (median, max), and what a tick's CPU would take at Lambda's memory sizes (Lambda gives a
 * function CPU in proportion to its memory, one vCPU at 1,769 MB). The last line is one JSON object.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Option } from 'commander';
import { build, type Plugin } from 'esbuild';
import { parseDeploymentConfig, type StreamConfig } from '../lib/config/schema';
import { createInProcessDispatcher } from '../lib/dispatch/dispatcher.local';
import { quietKafkaLog } from '../lib/kafka/client';
import { ensureLedgerTable } from '../lib/ledger/table';
import { processRanges } from '../lib/processor/process-range';
import { rangesOfPayload, type RangePayload, type RangesPayload } from '../lib/ranges';
import { composeAdapters, dynamoClientFromEnv, LOCAL_EMULATOR_LIMITS } from '../lib/runtime/compose';
import { wholeNumberOption } from '../lib/cli/args';
import { ValidationError } from '../lib/errors';
import { benchArgs, benchLog, benchProgram, runBench } from './cli';
import { mean, median } from './stats';
import { lambdaNodeFlags } from '../infra/local/lambda/node-flags';
import { createBusyTopics } from './busy-topics';
import { withStack, type BenchStack } from './stack';

// The functions' esbuild plugins (CommonJS, shared with serverless.yml).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const projectEsbuildPlugins = require('../infra/serverless/esbuild-plugins.js') as (serverless: unknown) => Plugin[];

const log = benchLog('planner-memory');
const ROOT = resolve(__dirname, '..');
/** Lambda's memory at which a function has one full vCPU. */
const ONE_VCPU_MB = 1769;
const LAMBDA_MEMORY_MB = [128, 256, 512, 1024, 1769] as const;
/** Full ticks left out of the warm figures: V8 is still compiling the planner's code in them. */
const WARM_UP_FULL_TICKS = 2;

type ChildResult = {
  loadedRssMb: number;
  peakRssMb: number;
  peakHeapUsedMb: number;
  cpuMs: number;
  wallMs: number;
  /** Each tick's CPU time and the ranges it dispatched. */
  ticks: Array<{ cpuMs: number; ranges: number }>;
  loop: string;
};

type Size = { topics: number; partitions: number };

/** `--sizes`: `<topics>x<partitions>`, comma-separated. */
function parseSizes(text: string): Size[] {
  return text.split(',').map((s) => {
    const [topics, partitions] = s.split('x').map(Number);
    if (!Number.isInteger(topics) || !Number.isInteger(partitions) || !topics || !partitions)
      throw new ValidationError(`--sizes: "${s}" is not <topics>x<partitions>`);
    return { topics: topics as number, partitions: partitions as number };
  });
}

const DEFAULT_SIZES = '1x10,10x100';

const program = benchProgram('planner-memory', "the deployed planner handler's memory and CPU per tick, under Lambda's heap limits")
  .addOption(
    new Option('--sizes <list>', 'busy partitions to measure, as <topics>x<partitions>,...')
      .argParser(parseSizes)
      .default(parseSizes(DEFAULT_SIZES), DEFAULT_SIZES),
  )
  .addOption(wholeNumberOption('--run-ms <ms>', 'how long the planner child ticks per size', 45_000))
  .addOption(wholeNumberOption('--memory-mb <mb>', 'the Lambda memory whose heap limits the child runs under', 192))
  .option('--cpu-prof-dir <dir>', "write the planner child's V8 CPU profile per size here (open it in Chrome's DevTools)");

type Flags = { sizes: Size[]; runMs: number; memoryMb: number; cpuProfDir?: string; keep: boolean };

async function main(): Promise<void> {
  const { sizes, runMs, memoryMb, cpuProfDir: profDir, keep } = benchArgs<Flags>(program);
  const dir = mkdtempSync(join(tmpdir(), 'planner-memory-'));
  try {
    const child = join(dir, 'planner.js');
    // As serverless.yml's esbuild settings bundle the functions: the project's plugins (handler
    // modules bundled, no run-time compiler), minified, the AWS SDK left to the runtime's copy.
    await build({
      absWorkingDir: ROOT,
      entryPoints: ['bench/planner-memory/child.ts'],
      outfile: child,
      bundle: true,
      // Unminified under the profiler, so that its frames name the project's files and functions.
      minify: !profDir,
      keepNames: true,
      platform: 'node',
      target: 'node22',
      format: 'cjs',
      external: ['@aws-sdk/*'],
      plugins: projectEsbuildPlugins({
        service: { custom: { handlerModules: [] }, provider: { architecture: process.arch === 'arm64' ? 'arm64' : 'x86_64' } },
      }),
      logLevel: 'warning',
    });
    await withStack(log, { keep }, async (stack) => {
      const results = [];
      const cpuProfDir = profDir ? resolve(profDir) : undefined;
      for (const size of sizes) results.push(await measure(stack, child, size, { runMs, memoryMb, cpuProfDir }));
      process.stdout.write(`${JSON.stringify({ node: process.version, runMs, lambdaMemoryMb: memoryMb, sizes: results })}\n`);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One size: its topics and ledger, the planner child for `runMs`, records every second, the figures. */
async function measure(stack: BenchStack, child: string, size: Size, run: { runMs: number; memoryMb: number; cpuProfDir?: string }) {
  const busy = await createBusyTopics(stack, {
    what: `pm${size.topics * size.partitions}`,
    clientId: 'bench-planner-memory',
    topics: size.topics,
    partitions: size.partitions,
  });
  const ledgerTable = stack.table('pm-ledger');
  const dynamo = dynamoClientFromEnv(process.env, { limits: LOCAL_EMULATOR_LIMITS });
  await ensureLedgerTable(dynamo, ledgerTable);
  const input = busy.config(ledgerTable);
  const config = parseDeploymentConfig(input, 'bench');
  const stream = config.streams[0] as StreamConfig;
  const ctx = composeAdapters({ config, env: process.env, dynamo, kafkaLog: quietKafkaLog });
  const processors = createInProcessDispatcher((payload) =>
    processRanges(
      { ledger: ctx.ledger, readerFor: (s) => ctx.readerFor(s), handlerFor: (s) => ctx.handlerFor(s), storeClock: ctx.storeClock },
      { stream, ranges: rangesOfPayload(payload), deadlineAtMs: Date.now() + 60_000, single: !('ranges' in payload) },
    ),
  );
  const producing = setInterval(() => {
    void busy.producer
      .sendBatch({
        topicMessages: busy.names.map((topic) => ({
          topic,
          messages: Array.from({ length: size.partitions }, (_, p) => ({ value: 'x', partition: p })),
        })),
      })
      .catch((err: unknown) => log(`produce failed: ${String(err)}`));
  }, 1000);
  try {
    const env = {
      ...process.env,
      STREAMS_CONFIG: JSON.stringify(input),
      PLANNER_RUN_MS: String(run.runMs),
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(run.memoryMb),
    };
    const profile = run.cpuProfDir
      ? ['--cpu-prof', `--cpu-prof-dir=${run.cpuProfDir}`, `--cpu-prof-name=planner-${partitionsOf(size)}.cpuprofile`]
      : [];
    const result = await runChild(child, [...lambdaNodeFlags(run.memoryMb), ...profile], env, (p) => {
      const ranges = rangesOfPayload(p);
      void processors.dispatch(ranges, { invocations: [ranges.map((_, i) => i)] });
    });
    clearInterval(producing);
    await processors.idle();
    const partitions = partitionsOf(size);
    const caughtUp = (await ctx.ledger.readPartitions(stream.id)).filter((p) => p.committed > 0).length;
    // Warm ticks that planned (nearly) every partition: the first tick (registration, cold code) aside.
    const full = result.ticks.slice(1).filter((t) => t.ranges >= 0.9 * size.topics * size.partitions);
    // The first full ticks run code V8 is still compiling (on its own threads, counted in the process's
    // CPU): a long run's later ticks are the steady state a resident planner lives in.
    const warm = full.slice(WARM_UP_FULL_TICKS);
    const steady = warm.length ? warm : full;
    const cpuMsPerTick = steady.length ? median(steady.map((t) => t.cpuMs)) : undefined;
    log(`${partitions} partitions: ${JSON.stringify(result)}, ${caughtUp} partitions with records processed`);
    const { loop: _loop, ticks, ...rest } = result;
    return {
      partitions,
      ...rest,
      ticks: ticks.length,
      fullTicks: full.length,
      withinMemory: result.peakRssMb <= run.memoryMb,
      fullTickCpuMs: full.length
        ? { p50: Math.round(median(full.map((t) => t.cpuMs))), max: Math.max(...full.map((t) => t.cpuMs)) }
        : undefined,
      warmFullTicks: warm.length,
      warmFullTickCpuMs: warm.length ? { p50: Math.round(cpuMsPerTick as number), max: Math.max(...warm.map((t) => t.cpuMs)) } : undefined,
      // Every tick after the warm-up, full or not (the garbage of one tick is collected during the next).
      warmTickCpuMsMean: warm.length ? Math.round(mean(result.ticks.slice(result.ticks.indexOf(warm[0]!)).map((t) => t.cpuMs))) : undefined,
      partitionsProcessed: caughtUp,
      // A tick's CPU at each Lambda memory size (CPU in proportion to memory), warm when the run had warm ticks.
      tickCpuMsAtLambdaMemory: Object.fromEntries(
        LAMBDA_MEMORY_MB.map((mb) => [mb, cpuMsPerTick === undefined ? undefined : Math.round((cpuMsPerTick * ONE_VCPU_MB) / mb)]),
      ),
    };
  } finally {
    clearInterval(producing);
    await Promise.allSettled([ctx.close(), busy.close()]);
  }
}

const partitionsOf = (size: { topics: number; partitions: number }): number => size.topics * size.partitions;

/** Runs the bundled planner; each JSON line on its fd 3 is an invocation, the `RESULT` line its figures. */
function runChild(
  file: string,
  nodeArgs: string[],
  env: NodeJS.ProcessEnv,
  onInvocation: (p: RangePayload | RangesPayload) => void,
): Promise<ChildResult> {
  // The SDK is not in the bundle (Lambda's runtime has it): the project's node_modules stand in.
  const child = spawn(process.execPath, [...nodeArgs, file], {
    cwd: ROOT,
    env: { ...env, NODE_PATH: join(ROOT, 'node_modules') },
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let result: ChildResult | undefined;
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdio[3] as NodeJS.ReadableStream });
  lines.on('line', (line) => {
    if (line.startsWith('RESULT ')) result = JSON.parse(line.slice(7)) as ChildResult;
    else if (line.trim()) onInvocation(JSON.parse(line) as RangePayload | RangesPayload);
  });
  return new Promise((res, rej) =>
    child.on('close', (code) =>
      code === 0 && result ? res(result) : rej(new Error(`the planner child exited with ${code}: ${stderr.slice(-2000)}`)),
    ),
  );
}

runBench('planner-memory', main);
