/** Stops the services global-setup started (never ones reused from the environment). */
import { rmSync } from 'node:fs';
import { stopStack } from '../../infra/local/stack';

export default async function globalTeardown(): Promise<void> {
  const state = globalThis.__LOCAL_STACK__;
  if (!state) return;
  await stopStack(state, (line) => process.stderr.write(`[stack] ${line}\n`));
  rmSync(state.dir, { recursive: true, force: true });
  globalThis.__LOCAL_STACK__ = undefined;
}
