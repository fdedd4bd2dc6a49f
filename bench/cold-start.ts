/**
 * `npm run bench:cold-start`: the functions' cold starts as Lambda's runtime reports them. Packages
 * the stack (osls, a one-stream no-op config), runs it as deployed (the emulator's CloudFormation,
 * the zips under AWS's runtime emulator and Node runtime client: infra/local/lambda/), and invokes
 * each function `--runs` times in a fresh execution environment (the previous ones recycled, as
 * Lambda does), with a payload its handler refuses (no Kafka or ledger request), reading each
 * init's duration from the emulator's `INIT REPORT` line. Prints the median, p99 and range per
 * function, with the zip and bundle sizes.
 *
 * Flags: --runs N (default 15), --keep. Uses KAFKA_BROKERS / DYNAMODB_ENDPOINT when set, otherwise
 * a private local stack.
 */
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_DIR } from '../infra/local/stack/dirs';
import { wholeNumberOption } from '../lib/cli/args';
import { benchArgs, benchLog, benchProgram, runBench } from './cli';
import { runConfigAsDeployed } from './packaged-stack';
import { withStack } from './stack';
import { median, percentile } from './stats';

const log = benchLog('cold-start');

const program = benchProgram('cold-start', "the functions' cold starts as Lambda's runtime reports them, on the packaged stack").addOption(
  wholeNumberOption('--runs <n>', 'cold starts per function', 15),
);

/** What each function refuses at once, after its init: a payload of the wrong shape. */
const REFUSED = { planner: { streams: 5 }, processor: { stream: 5 } } as const;

async function main(): Promise<void> {
  const { runs, keep } = benchArgs<{ runs: number; keep: boolean }>(program);
  await withStack(log, { keep }, async (stack) => {
    const dir = join(LOCAL_DIR, 'bench', `cold-start-${process.pid}`);
    try {
      const stream = { id: stack.name('cold'), kafka: { brokers: stack.brokers.split(',') }, topics: ['unused'] };
      const run = await runConfigAsDeployed({
        config: { ledgerTable: 'cold-start', streams: [{ ...stream, handler: { module: 'noop', mode: 'at-least-once' } }] },
        stage: 'cold',
        stackName: stack.name('cold-start'),
        dir,
        schedules: false,
      });
      try {
        const out: Record<string, unknown> = {};
        for (const fn of ['planner', 'processor'] as const) {
          const spec = run.stack.functions.find((f) => f.name.endsWith(`-${fn}`))!;
          const inits: number[] = [];
          for (let i = 0; i < runs; i++) {
            run.lambda.recycle();
            await run.lambda.invoke(spec.name, REFUSED[fn]);
            const r = run.lambda.records.at(-1)!;
            if (r.initMs === undefined) throw new Error(`${fn}: invocation ${i} reported no init (not a cold start)`);
            inits.push(r.initMs);
          }
          out[fn] = {
            initMs: {
              p50: Math.round(median(inits)),
              p99: Math.round(percentile(inits, 99)),
              min: Math.round(Math.min(...inits)),
              max: Math.round(Math.max(...inits)),
            },
            memoryMb: spec.memoryMb,
            zipBytes: statSync(spec.zip).size,
          };
          log(`${fn}: init ${JSON.stringify((out[fn] as { initMs: unknown }).initMs)} ms over ${runs} cold starts`);
        }
        process.stdout.write(`${JSON.stringify({ runs, node: process.version, ...out })}\n`);
      } finally {
        await run.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

runBench('cold-start', main);
