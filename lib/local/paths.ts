/**
 * Where the local runtime keeps its files: the local state directory (`.local/`, see lib/paths.ts),
 * shared with the local stack (infra/local/stack/persistent.ts writes `.local/stack/state.json`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_ROOT } from '../paths';

export { LOCAL_ROOT } from '../paths';
/** The demo's deployment config, rewritten by every `npm start`; the CLI's default config. */
export const DEMO_CONFIG_FILE = join(LOCAL_ROOT, 'demo', 'streams.json');
const STACK_STATE_FILE = join(LOCAL_ROOT, 'stack', 'state.json');

/** Endpoints of the persistent local stack as last recorded by `npm run local:up` / `npm start` (not checked for liveness). */
export function recordedLocalStack(): { kafkaBrokers: string; dynamodbEndpoint: string } | undefined {
  if (!existsSync(STACK_STATE_FILE)) return undefined;
  try {
    const s = JSON.parse(readFileSync(STACK_STATE_FILE, 'utf8')) as { kafkaBrokers?: unknown; dynamodbEndpoint?: unknown };
    if (typeof s.kafkaBrokers !== 'string' || typeof s.dynamodbEndpoint !== 'string') return undefined;
    return { kafkaBrokers: s.kafkaBrokers, dynamodbEndpoint: s.dynamodbEndpoint };
  } catch {
    return undefined;
  }
}
