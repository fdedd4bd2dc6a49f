/**
 * `local:up`'s arguments: `--brokers N`, `--secured` and `--registry`, declared on its commander
 * program and read strictly (lib/cli/args.ts).
 */
import { Command } from 'commander';
import { parseArgv, usageLine } from '../../../lib/cli/args';
import { PrerequisiteError } from '../../../lib/errors';

export type UpArgs = { kafkaNodes: number; secured: boolean; registry: boolean };

/** `local:up`'s options, without parsing: `parseUpArgs` parses with it, the docs' test reads it. */
export function upProgram(): Command {
  return new Command('local:up')
    .description('start the local stack (or reuse the running one) and print its addresses as shell variables')
    .option('--brokers <n>', 'Kafka nodes of the local stack, 1 to 9 (default 1)')
    .option('--secured', 'a SASL/SCRAM and TLS listener beside the plain one (one broker)')
    .option('--registry', 'also start a Confluent-compatible schema registry');
}

/** `--brokers N` (Kafka nodes of the local stack; default 1), `--secured`, `--registry`. */
export function parseUpArgs(args: string[]): UpArgs {
  const program = upProgram();
  const usage = `${usageLine(program)} with <n> from 1 to 9 (--secured: one broker)`;
  const refuse = (reason: string) => new PrerequisiteError(`${reason}; ${usage}`);
  const { opts } = parseArgv<{ brokers?: string; secured?: boolean; registry?: boolean }>(program, args, refuse);
  const secured = opts.secured === true;
  const n = opts.brokers === undefined ? 1 : Number(opts.brokers);
  if (!Number.isInteger(n) || n < 1 || n > 9 || (secured && n > 1))
    throw new PrerequisiteError(`${usage}, not ${JSON.stringify(args.join(' '))}`);
  return { kafkaNodes: n, secured, registry: opts.registry === true };
}
