/**
 * Where the engine's own files are, the same from its TypeScript sources (a clone, tests) and from
 * its built JavaScript (`dist/`, an installed package), and where local state lives.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const PACKAGE_NAME = 'kafka-lambda-direct';

/** The nearest directory at or above `from` holding this package's package.json. */
function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === PACKAGE_NAME) return dir;
    if (dirname(dir) === dir) throw new Error(`no ${PACKAGE_NAME} package.json at or above ${from}`);
  }
}

/** The engine's package directory: the clone, or `node_modules/kafka-lambda-direct` of a project. */
export const PACKAGE_ROOT = findPackageRoot(__dirname);

/** A file shipped with the engine (`infra/local/kafka/pom.xml`, `templates/stream`, ...), by its path in the package. */
export function packageFile(...parts: string[]): string {
  return join(PACKAGE_ROOT, ...parts);
}

/** Whether the engine runs from a source checkout (TypeScript through tsx or jest), not from a built package. */
export function isSourceCheckout(root = PACKAGE_ROOT): boolean {
  // tsconfig.json is not in the published files, so only a clone has it.
  return existsSync(join(root, 'tsconfig.json'));
}

/**
 * Local state (Kafka jars and the emulator's virtualenv, the persistent local stack, test stacks):
 * KAFKA_DIRECT_HOME when set; for an engine installed into a project, that project's `.local/`
 * (next to its node_modules, so reinstalling the engine keeps the stack); else the clone's `.local/`.
 */
function localRootFor(root: string, env: NodeJS.ProcessEnv): string {
  if (env.KAFKA_DIRECT_HOME) return env.KAFKA_DIRECT_HOME;
  const parent = dirname(root);
  const modules = basename(parent) === 'node_modules' ? parent : basename(dirname(parent)) === 'node_modules' ? dirname(parent) : undefined;
  return join(modules === undefined ? root : dirname(modules), '.local');
}

/** See `localRootFor`: this process's local state directory. */
export const LOCAL_ROOT = localRootFor(PACKAGE_ROOT, process.env);
