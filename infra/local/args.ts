/**
 * The local stack's commands parse their options with Node's own `util.parseArgs` (as the scripts
 * and benchmarks do; the two programs with sub-commands and help, `kafka-direct` and `npm start`,
 * use commander): strict, no positionals, and any refusal turned into the command's own usage error.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parses `args` strictly against `options`; an unknown option, a missing value or a positional throws `usage(arg)`. */
export function strictArgs<O extends Options>(args: string[], options: O, usage: (arg: string) => Error) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false });
  } catch (err) {
    // parseArgs names the offending argument in its message only: the usage line says it instead.
    const named = /'(-[^']*)'|"([^"]*)"/.exec((err as Error).message);
    throw usage(named?.[1] ?? named?.[2] ?? args.join(' '));
  }
}
