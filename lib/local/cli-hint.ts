/**
 * How the local runtime's messages tell the user to run the operations CLI: `npm run cli --` from a
 * clone, `npx kafka-direct` from a stream project, always on the local stack (`--local`), with the
 * config named unless it is the project's own.
 */
import { resolve } from 'node:path';
import { isSourceCheckout } from '../paths';
import { findStreamProject } from '../project/project';

/**
 * The command that runs a local-stack command (`reset`, `down`, ...): `npm run local:<c>` in a
 * clone, else `npx kafka-direct local <c>`.
 */
export function localCommand(command: string): string {
  return isSourceCheckout() ? `npm run local:${command}` : `npx kafka-direct local ${command}`;
}

/** The command line that runs `command` of the operations CLI against this run's config and stack. */
export function cliCommand(command: string, configFile: string | undefined, cwd = process.cwd()): string {
  const bin = isSourceCheckout() ? 'npm run cli --' : 'npx kafka-direct';
  if (configFile === undefined) return `${bin} ${command}`;
  const own = findStreamProject(cwd)?.configFile === resolve(cwd, configFile);
  return `${bin} --local${own ? '' : ` --config ${configFile}`} ${command}`;
}
