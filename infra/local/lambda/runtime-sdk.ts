/**
 * The AWS SDK the local Lambda's functions find at run time, as Lambda's Node.js runtime provides
 * its own copy (functions are bundled without `@aws-sdk/*`). It is the engine's installed SDK: a
 * directory of links to its `@aws-sdk/*` packages, put on NODE_PATH, so a function resolves those and
 * nothing else of the engine's dependencies (each SDK package's own dependencies resolve from its real
 * place). Lambda's copy has every client; this one has those the engine installs.
 */
import { mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Creates `<dir>/node_modules/@aws-sdk/*` (links) and returns `<dir>/node_modules`, for NODE_PATH. */
export function linkRuntimeSdk(dir: string): string {
  const scope = dirname(dirname(require.resolve('@aws-sdk/client-dynamodb/package.json')));
  const modules = join(dir, 'node_modules');
  const target = join(modules, '@aws-sdk');
  rmSync(modules, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  for (const name of readdirSync(scope)) symlinkSync(join(scope, name), join(target, name), 'dir');
  return modules;
}
