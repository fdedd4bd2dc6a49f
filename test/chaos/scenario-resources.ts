/**
 * What a chaos scenario creates on the stack: topics and tables named `chaos-<what>-<time>-<hex>`,
 * recorded in the environment as they are made, so the harness deletes them when the scenario ends,
 * passed or failed, and a soak on a shared stack leaves nothing behind.
 */
import { ensureLedgerTable } from '../../lib/ledger/table';
import { createSinkTable } from '../../lib/sink/table.dynamodb';
import { toolResourceName } from '../../lib/local/tool-names';
import { createTopicsReady } from '../support/env';
import type { ChaosEnv } from './harness';

/** A fresh name for what a scenario creates (topics and streams derive from it). */
export function scenarioName(what: string): string {
  return toolResourceName('chaos', what);
}

/** Creates the topics (recorded first: a creation that timed out may still have made them) and waits for their leaders. */
export async function createScenarioTopics(
  env: Pick<ChaosEnv, 'admin' | 'created'>,
  topics: Parameters<typeof createTopicsReady>[1],
  timeoutMs?: number,
): Promise<void> {
  env.created.topics.push(...topics.map((t) => t.topic));
  await createTopicsReady(env.admin, topics, timeoutMs);
}

/** Creates a fresh sink table keyed by `pk` (string), as running-totals and the audit log expect; returns its name. */
export async function createScenarioTable(env: Pick<ChaosEnv, 'ddb' | 'created'>, what: string): Promise<string> {
  const name = scenarioName(what);
  env.created.tables.push(name);
  await createSinkTable(env.ddb, name);
  return name;
}

/** Creates a fresh ledger table; returns its name. */
export async function createScenarioLedger(env: Pick<ChaosEnv, 'ddb' | 'created'>, what: string): Promise<string> {
  const name = scenarioName(what);
  env.created.tables.push(name);
  await ensureLedgerTable(env.ddb, name);
  return name;
}
