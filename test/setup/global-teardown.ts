/** Stops the services global-setup started (never ones reused from the environment) and the registries test files started. */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { stopRecordedRegistry } from '../../infra/local/registry';
import { stopStack } from '../../infra/local/stack/parts';

export default async function globalTeardown(): Promise<void> {
  const dir = globalThis.__TEST_RUN_DIR__;
  const log = (line: string): void => {
    process.stderr.write(`[stack] ${line}\n`);
  };
  if (dir && existsSync(dir)) {
    const registries = readdirSync(dir).filter((d) => d.startsWith('registry-'));
    for (const r of registries) if (await stopRecordedRegistry(join(dir, r))) log(`schema registry ${r} stopped`);
  }
  const state = globalThis.__LOCAL_STACK__;
  if (state) await stopStack(state, log);
  if (dir) rmSync(dir, { recursive: true, force: true });
  globalThis.__LOCAL_STACK__ = undefined;
  globalThis.__TEST_RUN_DIR__ = undefined;
}
