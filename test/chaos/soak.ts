/**
 * Chaos soak: `npm run chaos -- --minutes 30 [--seed n]` loops over every chaos scenario with a new
 * seed each pass until the time is up, then prints a JSON summary (exit 1 if any run failed).
 * Needs a running stack: `eval "$(npm run -s local:up)"; export KAFKA_BROKERS DYNAMODB_ENDPOINT`.
 * Each scenario deletes its topics and tables when it ends, the soak its ledger table; Ctrl-C or
 * SIGTERM deletes them too, then exits 130.
 */
import { cleanUpOnSignals, exitCleanups } from '../../lib/local/exit-cleanup';
import { removalLine } from '../../lib/local/tool-cleanup';
import { closeChaosEnv, openChaosEnv, runScenario, SCENARIOS, type ScenarioResult } from './harness';
import { NO_SIDE_FIGURES } from './run-checks';
import { testDynamo, testKafka } from '../support/env';

const log = (line: string): void => void process.stderr.write(`[chaos] ${line}\n`);

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v < 0) {
    console.error(`--${name} needs a non-negative number`);
    process.exit(2);
  }
  return v;
}

async function main(): Promise<void> {
  if (!process.env.KAFKA_BROKERS || !process.env.DYNAMODB_ENDPOINT) {
    console.error('KAFKA_BROKERS and DYNAMODB_ENDPOINT must be set: eval "$(npm run -s local:up)"; export KAFKA_BROKERS DYNAMODB_ENDPOINT');
    process.exit(2);
  }
  cleanUpOnSignals(exitCleanups, process, log, (code) => process.exit(code));
  const minutes = arg('minutes', 5);
  const seed0 = arg('seed', Date.now() % 1_000_000);
  const endAt = Date.now() + minutes * 60_000;
  const ddb = testDynamo();
  const env = await openChaosEnv(testKafka('chaos-soak'), ddb);
  const failures: ScenarioResult[] = [];
  const perScenario: Record<string, { runs: number; failed: number; produced: number; auditDuplicates: number; maxWallMs: number }> = {};
  let runs = 0;
  let pass = 0;
  const t0 = Date.now();
  const closeEnv = async (): Promise<void> => {
    log(`soak's ledger table: ${removalLine(await closeChaosEnv(env))}`);
    ddb.destroy();
  };
  await exitCleanups.around(closeEnv, async () => {
    while (Date.now() < endAt) {
      for (const scenario of SCENARIOS) {
        if (Date.now() >= endAt) break;
        const seed = seed0 + runs;
        runs++;
        const res = await runScenario(env, scenario, seed, { budgetMs: 90_000 }).catch((err: unknown): ScenarioResult => ({
          scenario,
          seed,
          injected: 'harness error',
          produced: 0,
          expected: 0,
          applied: 0,
          duplicates: 0,
          losses: 0,
          ...NO_SIDE_FIGURES,
          violations: [],
          problems: [`harness error: ${err instanceof Error ? err.stack : String(err)}`],
          rounds: 0,
          invocations: 0,
          processorErrors: 0,
          statuses: {},
          wallMs: 0,
          ok: false,
        }));
        const s = (perScenario[scenario] ??= { runs: 0, failed: 0, produced: 0, auditDuplicates: 0, maxWallMs: 0 });
        s.runs++;
        s.produced += res.produced;
        s.auditDuplicates += res.auditDuplicates;
        s.maxWallMs = Math.max(s.maxWallMs, res.wallMs);
        if (res.ok) pass++;
        else {
          s.failed++;
          failures.push(res);
        }
        process.stderr.write(`${res.ok ? 'ok  ' : 'FAIL'} ${scenario} seed=${seed} ${res.wallMs} ms ${res.injected}\n`);
      }
    }
  });
  console.log(
    JSON.stringify({ seed: seed0, minutes, wallMs: Date.now() - t0, runs, pass, failed: failures.length, perScenario, failures }),
  );
  process.exitCode = failures.length ? 1 : 0;
}

void main();
