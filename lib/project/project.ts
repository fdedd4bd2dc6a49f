/**
 * A stream project: a directory of its own (made by `kafka-direct init`) whose package.json depends
 * on the engine and says where its streams config is (`"kafkaDirect": { "config": "streams.json" }`).
 * The project tools (`start`, `deploy`) and the operations commands default to that config.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ValidationError } from '../errors';

/** The `kafkaDirect` field of a stream project's package.json. */
export type ProjectSettings = {
  /** The streams config, relative to the project directory. */
  config: string;
  /** CloudFormation service name (stack `<service>-<stage>`); default: the package name. */
  service?: string;
};

export type StreamProject = { dir: string; packageName: string; settings: ProjectSettings; configFile: string };

/** The nearest stream project at or above `cwd`, or undefined (a directory with a package.json without `kafkaDirect` ends the search). */
export function findStreamProject(cwd: string): StreamProject | undefined {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) return projectAt(dir, manifest);
    if (dirname(dir) === dir) return undefined;
  }
}

function projectAt(dir: string, manifest: string): StreamProject | undefined {
  let pkg: { name?: unknown; kafkaDirect?: unknown };
  try {
    pkg = JSON.parse(readFileSync(manifest, 'utf8')) as typeof pkg;
  } catch (e) {
    throw new ValidationError(`${manifest} is not valid JSON (${(e as Error).message})`, { cause: e });
  }
  if (pkg.kafkaDirect === undefined) return undefined;
  const s = pkg.kafkaDirect as Partial<Record<keyof ProjectSettings, unknown>>;
  if (typeof s !== 'object' || s === null || typeof s.config !== 'string' || s.config.trim() === '') {
    throw new ValidationError(`${manifest}: "kafkaDirect" must be { "config": "<streams config file>", "service"?: "<name>" }`);
  }
  if (s.service !== undefined && (typeof s.service !== 'string' || !SERVICE_NAME.test(s.service))) {
    throw new ValidationError(`${manifest}: kafkaDirect.service must match ${SERVICE_NAME} (it names the CloudFormation stack)`);
  }
  const settings: ProjectSettings = { config: s.config, ...(typeof s.service === 'string' ? { service: s.service } : {}) };
  return { dir, packageName: typeof pkg.name === 'string' ? pkg.name : '', settings, configFile: resolve(dir, s.config) };
}

/** A CloudFormation-friendly service name: starts with a letter, letters, digits and '-', at most 40 characters. */
export const SERVICE_NAME = /^[a-zA-Z][a-zA-Z0-9-]{0,39}$/;

/** The service name of a project: kafkaDirect.service, else the package name made fit (scope and odd characters dropped). */
export function serviceNameOf(project: StreamProject): string {
  if (project.settings.service) return project.settings.service;
  const base = project.packageName
    .replace(/^@[^/]+\//, '')
    .replace(/[^a-zA-Z0-9-]+/g, '-')
    .replace(/^[^a-zA-Z]+/, '')
    .slice(0, 40);
  const trimmed = base.replace(/-+$/, '');
  if (!SERVICE_NAME.test(trimmed)) {
    throw new ValidationError(
      `cannot make a service name of package name ${JSON.stringify(project.packageName)}: set kafkaDirect.service in package.json`,
    );
  }
  return trimmed;
}
