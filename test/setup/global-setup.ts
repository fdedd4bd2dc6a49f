/**
 * Starts one Kafka broker and one DynamoDB emulator for the whole jest run (or reuses the services
 * named by KAFKA_BROKERS / DYNAMODB_ENDPOINT). Workers inherit the two variables, and the run's
 * directory and pid, where test files that need a schema registry start one (test/support/registry.ts).
 */
import { join } from 'node:path';
import { LOCAL_DIR } from '../../infra/local/stack/dirs';
import { startStack } from '../../infra/local/stack/parts';
import { securedEnv } from '../../infra/local/stack/secured';
import type { StackState } from '../../infra/local/stack/state';

declare global {
  var __LOCAL_STACK__: StackState | undefined;
  var __TEST_RUN_DIR__: string | undefined;
}

export default async function globalSetup(): Promise<void> {
  const log = (line: string): void => {
    process.stderr.write(`\n[stack] ${line}`);
  };
  const dir = join(LOCAL_DIR, 'test-runs', String(process.pid));
  globalThis.__TEST_RUN_DIR__ = dir;
  process.env.LOCAL_TEST_RUN_DIR = dir;
  process.env.LOCAL_TEST_OWNER_PID = String(process.pid);
  if (process.env.KAFKA_BROKERS && process.env.DYNAMODB_ENDPOINT) {
    log(`reusing KAFKA_BROKERS=${process.env.KAFKA_BROKERS} DYNAMODB_ENDPOINT=${process.env.DYNAMODB_ENDPOINT}\n`);
    return;
  }
  const t0 = Date.now();
  // The broker is secured too (SASL_SSL with SCRAM, SSL with client certificates), for the secured-cluster tests.
  const state = await startStack({ dir, ownerPid: process.pid, log, secured: true });
  globalThis.__LOCAL_STACK__ = state;
  process.env.KAFKA_BROKERS = state.kafkaBrokers;
  process.env.DYNAMODB_ENDPOINT = state.dynamodbEndpoint;
  if (state.secured) Object.assign(process.env, securedEnv(state.secured));
  log(`ready in ${Date.now() - t0} ms: KAFKA_BROKERS=${state.kafkaBrokers} DYNAMODB_ENDPOINT=${state.dynamodbEndpoint}\n`);
}
