/**
 * The local stack's commands and their arguments, as their usage says them: the one list that
 * `infra/local/cli.ts` dispatches on (a command without a handler there does not type-check), that
 * the usage lines of `local:*` and `kafka-direct local` print, and that the docs' test checks the
 * documented commands against (test/unit/docs/cli.test.ts). No imports: `kafka-direct --help` reads
 * it without loading the stack's code.
 */
export const LOCAL_COMMANDS = {
  up: '[--brokers N] [--secured] [--registry]',
  down: '',
  reset: '',
  prune: '[--dry-run] [--older-than 1d]',
  prepare: '',
  topic: '<name> [--partitions n] [--produce <file.jsonl>]',
} as const;
export type LocalCommand = keyof typeof LOCAL_COMMANDS;

/** Whether `name` is one of the commands. */
export function isLocalCommand(name: string | undefined): name is LocalCommand {
  return name !== undefined && Object.hasOwn(LOCAL_COMMANDS, name);
}

/** The commands with their arguments, `|`-separated: `up [--brokers N] ...|down|...`. */
export function localCommandsUsage(): string {
  return Object.entries(LOCAL_COMMANDS)
    .map(([name, args]) => (args ? `${name} ${args}` : name))
    .join('|');
}

/** Each command's long options (`--brokers`, ...), read from its arguments. */
export function localCommandFlags(name: LocalCommand): string[] {
  return [...LOCAL_COMMANDS[name].matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0]);
}
