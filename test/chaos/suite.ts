/**
 * The chaos suite's jest body (issue #7), shared by the files that run its scenarios: every scenario
 * of test/chaos/harness.ts, seeded and bounded, against the real broker and the DynamoDB emulator.
 * The scenarios are split in three parts, one file each (chaos.test.ts, chaos-network.test.ts,
 * chaos-continuous.test.ts), so that jest's two workers run them side by side at the end of the suite
 * (test/setup/sequencer.js) instead of one worker running all of them alone. Set CHAOS_SEED to replay
 * a seed; CHAOS_WRITE_REPORT=1 rewrites docs/RELIABILITY.md once every scenario has a result (each
 * file leaves its results in .local/chaos-report/, the last to finish writes the report; CI leaves
 * the tree untouched).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DEFAULT_BUDGET_MS } from './driver';
import { closeChaosEnv, openChaosEnv, reportMarkdown, runScenario, SCENARIOS, type ChaosEnv, type ScenarioResult } from './harness';
import { NETWORK_SCENARIOS } from './scenarios';
import { CONTINUOUS_VARIANTS } from './scenarios/continuous';
import { testDynamo, testKafka } from '../support/env';

type Scenario = (typeof SCENARIOS)[number];

/** The network faults (through the fault proxies) and freeze-thaw: mostly waiting, little load of their own. */
const NETWORK_PART = new Set<Scenario>([...NETWORK_SCENARIOS, 'freeze-thaw']);
const CONTINUOUS_PART = new Set<Scenario>(CONTINUOUS_VARIANTS);

/** The scenarios of each file, in SCENARIOS order: about 7 minutes of the first, 4 of the other two together. */
export const CHAOS_PARTS = {
  'processes-and-services': SCENARIOS.filter((s) => !NETWORK_PART.has(s) && !CONTINUOUS_PART.has(s)),
  network: SCENARIOS.filter((s) => NETWORK_PART.has(s)),
  continuous: SCENARIOS.filter((s) => CONTINUOUS_PART.has(s)),
} as const;

/**
 * A scenario's time: its budget (the rounds it runs until every record is applied: DEFAULT_BUDGET_MS
 * unless below), and jest's timeout, one rule for all: the budget, what the scenario does outside it
 * (`outsideMs`: a private cluster started first, a freeze's wait for thawed functions) and the checks
 * after it (CHECKS_MS, beside the rest of the suite on 2 cores).
 */
const DEFAULT_TIME = { budgetMs: DEFAULT_BUDGET_MS, outsideMs: 0 };
const CHECKS_MS = 60_000;
const TIME: Partial<Record<Scenario, { budgetMs: number; outsideMs: number }>> = {
  // Starts a private 3-broker cluster first (not counted in its budget).
  'leader-killed': { budgetMs: 90_000, outsideMs: 90_000 },
  'continuous-leader-killed': { budgetMs: 90_000, outsideMs: 90_000 },
  // Every round's segments run their 2 s: with a fifth of the requests failing, more rounds than the micro-batches'.
  'continuous-dynamodb-faults': { budgetMs: 90_000, outsideMs: 0 },
  // Its private broker's stop and start took 5 s alone and 10 s beside the other chaos file; every round's segments run their 2 s.
  'continuous-broker-restart': { budgetMs: 90_000, outsideMs: 0 },
  // Resets keep failing Fetches until a commit has been reset too: 34 s of 40 alone, over 40 s beside the continuous chaos file in CI.
  'network-reset': { budgetMs: 60_000, outsideMs: 0 },
  // Writes its thousands of items again on every retry and duplicate, one request per item since marked writes
  // left transactions: 48 s alone, over 90 s beside the rest of the suite.
  'large-batch': { budgetMs: 150_000, outsideMs: 30_000 },
  // Drains 960 ranges; its checks read them all.
  load: { budgetMs: Number(process.env.CHAOS_LOAD_BUDGET_MS ?? 360_000), outsideMs: 60_000 },
  // The budget is the warm phase's only: each freeze then waits up to 60 s for the thawed functions.
  'freeze-thaw': { budgetMs: 120_000, outsideMs: 240_000 },
};
const timeOf = (s: Scenario) => TIME[s] ?? DEFAULT_TIME;
const timeoutMsOf = (s: Scenario) => timeOf(s).budgetMs + timeOf(s).outsideMs + CHECKS_MS;

const REPORT_COMMAND = 'CHAOS_WRITE_REPORT=1 npx jest test/chaos/chaos --selectProjects integration';
const RESULTS_DIR = resolve(__dirname, '..', '..', '.local', 'chaos-report');

/** Registers the jest body running the part's scenarios (each seeded by its place in SCENARIOS, whichever file runs it). */
export function chaosSuite(part: keyof typeof CHAOS_PARTS): void {
  const scenarios = CHAOS_PARTS[part];
  const seed = Number(process.env.CHAOS_SEED ?? 7);
  const ddb = testDynamo();
  let env: ChaosEnv;
  const results: ScenarioResult[] = [];
  const t0 = Date.now();

  beforeAll(async () => {
    env = await openChaosEnv(testKafka('chaos'), ddb);
  });
  afterAll(async () => {
    await closeChaosEnv(env);
    ddb.destroy();
    if (process.env.CHAOS_WRITE_REPORT === '1' && results.length === scenarios.length) writeReport(part, results, seed, Date.now() - t0);
  });

  describe('chaos: every produced record applied exactly once, invariants hold', () => {
    for (const scenario of scenarios) {
      it(
        scenario,
        async () => {
          const res = await runScenario(env, scenario, seed * 1000 + SCENARIOS.indexOf(scenario), { budgetMs: timeOf(scenario).budgetMs });
          results.push(res);
          if (!res.ok || process.env.CHAOS_VERBOSE) console.log(JSON.stringify(res, null, 2));
          expect({ problems: res.problems, violations: res.violations }).toEqual({ problems: [], violations: [] });
          expect(res).toMatchObject({ duplicates: 0, losses: 0, auditLosses: 0 });
          expect(res.applied).toBe(res.expected);
          expect(res.ok).toBe(true);
        },
        timeoutMsOf(scenario),
      );
    }
  });
}

/**
 * Leaves this part's results beside the other parts'; once every scenario has one, writes
 * docs/RELIABILITY.md from them in SCENARIOS order (wall time: the longest part, as they run side by side).
 */
function writeReport(part: string, results: ScenarioResult[], seed: number, wallMs: number): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(resolve(RESULTS_DIR, `${part}.json`), JSON.stringify({ seed, wallMs, results }));
  const parts = readdirSync(RESULTS_DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(resolve(RESULTS_DIR, f), 'utf8')) as { seed: number; wallMs: number; results: ScenarioResult[] });
  const all = new Map(parts.filter((p) => p.seed === seed).flatMap((p) => p.results.map((r) => [r.scenario, r] as const)));
  if (!SCENARIOS.every((s) => all.has(s))) return;
  writeFileSync(
    resolve(__dirname, '..', '..', 'docs', 'RELIABILITY.md'),
    reportMarkdown(
      SCENARIOS.map((s) => all.get(s) as ScenarioResult),
      { seed, wallMs: Math.max(...parts.map((p) => p.wallMs)), command: REPORT_COMMAND },
    ),
  );
  rmSync(RESULTS_DIR, { recursive: true, force: true });
}
