/**
 * The `freeze-thaw` chaos scenario on its own (test/chaos/freeze-thaw.ts): the packaged planner and
 * processor behind idle NATs, frozen past the NATs' idle timeout and thawed. Its environment's
 * ledger table and the tables the scenario recorded are deleted at the end; the scenario stops its
 * stack, broker and NATs itself. CHAOS_SEED replays a seed; CHAOS_VERBOSE prints the result.
 */
import { closeChaosEnv, openChaosEnv, type ChaosEnv } from './env';
import { runFreezeThaw } from './freeze-thaw';
import { testDynamo, testKafka } from '../support/env';

const SEED = Number(process.env.CHAOS_SEED ?? 7);
const ddb = testDynamo();
let env: ChaosEnv;

beforeAll(async () => {
  env = await openChaosEnv(testKafka('chaos-freeze-thaw'), ddb);
});
afterAll(async () => {
  const removal = await closeChaosEnv(env);
  ddb.destroy();
  expect(removal.errors).toEqual([]);
});

it('a thawed planner and processor commit the next records without waiting out a timeout, exactly once', async () => {
  const res = await runFreezeThaw(env, SEED, { budgetMs: 120_000 });
  if (!res.ok || process.env.CHAOS_VERBOSE) console.log(JSON.stringify(res, null, 2));
  expect({ problems: res.problems, violations: res.violations }).toEqual({ problems: [], violations: [] });
  expect(res).toMatchObject({ duplicates: 0, losses: 0 });
  expect(res.applied).toBe(res.expected);
  expect(res.ok).toBe(true);
}, 420_000);
