/**
 * The soak (test/chaos/soak.ts) runs scenarios back to back on one shared environment (admin,
 * metadata cache, range readers). A scenario must leave nothing behind that breaks the next one:
 * after `topic-deleted`, every later scenario used to fail with "This server does not host this
 * topic-partition", because the shared producer still had the deleted topic in its metadata targets.
 * Nor may it leave its topics and tables on the stack: each is deleted when the scenario ends, and
 * the environment's ledger table when it closes.
 */
import { DescribeTableCommand, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { closeChaosEnv, openChaosEnv, runScenario, type ChaosEnv } from './harness';
import { testDynamo, testKafka } from '../support/env';

const ddb = testDynamo();
let env: ChaosEnv;
let closed = false;

beforeAll(async () => {
  env = await openChaosEnv(testKafka('chaos-sequence'), ddb);
});
afterAll(async () => {
  if (!closed) await closeChaosEnv(env);
  ddb.destroy();
});

async function tableExists(name: string): Promise<boolean> {
  return ddb.send(new DescribeTableCommand({ TableName: name })).then(
    () => true,
    (err: unknown) => {
      if (err instanceof ResourceNotFoundException) return false;
      throw err;
    },
  );
}

/** Those of the names the broker still lists or the emulator still describes. */
async function stillThere(names: { topics: string[]; tables: string[] }): Promise<string[]> {
  const topics = new Set(await env.admin.listTopics());
  const tables = await Promise.all(names.tables.map(async (t) => ((await tableExists(t)) ? [t] : [])));
  return [...names.topics.filter((t) => topics.has(t)), ...tables.flat()];
}

it('topic-deleted, then baseline and partitions-added on the same environment: all pass, and each deletes its topics and tables', async () => {
  const results = [];
  const removed = [];
  const left: string[] = [];
  for (const [i, scenario] of (['topic-deleted', 'baseline', 'partitions-added'] as const).entries()) {
    // 90 s each: in the full suite this file may run beside the chaos suite's load scenario, which
    // keeps the one emulator busy for minutes (a scenario alone finishes in about 10 s).
    const res = await runScenario(env, scenario, 9100 + i, { budgetMs: 90_000 });
    results.push({ scenario, ok: res.ok, problems: res.problems });
    const names = res.removed ?? { topics: [], tables: [] };
    removed.push({ scenario, topics: names.topics.length, tables: names.tables.length });
    // The removal waited until they were gone: checked right away, nothing may remain.
    left.push(...(await stillThere(names)));
  }
  expect(results).toEqual([
    { scenario: 'topic-deleted', ok: true, problems: [] },
    { scenario: 'baseline', ok: true, problems: [] },
    { scenario: 'partitions-added', ok: true, problems: [] },
  ]);
  // Sink and audit tables each; topic-deleted's second topic was deleted mid-run by the scenario itself,
  // partitions-added created a second topic mid-run.
  expect(removed).toEqual([
    { scenario: 'topic-deleted', topics: 1, tables: 2 },
    { scenario: 'baseline', topics: 1, tables: 2 },
    { scenario: 'partitions-added', topics: 2, tables: 2 },
  ]);
  expect(left).toEqual([]);
}, 330_000);

it('closing the environment deletes its ledger table', async () => {
  expect(await tableExists(env.ledgerTable)).toBe(true);
  closed = true;
  const removal = await closeChaosEnv(env);
  expect({ tables: removal.tables, errors: removal.errors }).toEqual({ tables: [env.ledgerTable], errors: [] });
  expect(await tableExists(env.ledgerTable)).toBe(false);
});
