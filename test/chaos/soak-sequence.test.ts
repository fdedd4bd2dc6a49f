/**
 * The soak (test/chaos/soak.ts) runs scenarios back to back on one shared environment (admin,
 * producer, metadata cache, range readers). A scenario must leave nothing behind that breaks the
 * next one: after `topic-deleted`, every later scenario used to fail with "This server does not host
 * this topic-partition", because the shared producer still had the deleted topic in its metadata
 * targets.
 */
import { closeChaosEnv, openChaosEnv, runScenario, type ChaosEnv } from './harness';
import { testDynamo, testKafka } from '../support/env';

const ddb = testDynamo();
let env: ChaosEnv;

beforeAll(async () => {
  env = await openChaosEnv(testKafka('chaos-sequence'), ddb);
});
afterAll(async () => {
  await closeChaosEnv(env);
  ddb.destroy();
});

it('topic-deleted, then baseline and partitions-added on the same environment: all pass', async () => {
  const results = [];
  for (const [i, scenario] of (['topic-deleted', 'baseline', 'partitions-added'] as const).entries()) {
    // 90 s each: in the full suite this file may run beside the chaos suite's load scenario, which
    // keeps the one emulator busy for minutes (a scenario alone finishes in about 10 s).
    const res = await runScenario(env, scenario, 9100 + i, { budgetMs: 90_000 });
    results.push({ scenario, ok: res.ok, problems: res.problems });
  }
  expect(results).toEqual([
    { scenario: 'topic-deleted', ok: true, problems: [] },
    { scenario: 'baseline', ok: true, problems: [] },
    { scenario: 'partitions-added', ok: true, problems: [] },
  ]);
}, 330_000);
