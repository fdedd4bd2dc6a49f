/**
 * `local:prune`: deletes from the running local stack the topics and DynamoDB tables the project's
 * own tools (benchmarks, the demo, the chaos soak) left there, recognised by their names
 * (lib/local/tool-names.ts) and older than a day by the creation time those names carry. Any other
 * name is a user's and never touched. `--dry-run` only lists them.
 */
import { ListTablesCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Command } from 'commander';
import { Kafka, logLevel } from 'kafkajs';
import { parseArgv, refuseWithUsage } from '../../lib/cli/args';
import { PrerequisiteError, ValidationError } from '../../lib/errors';
import { translatingClient } from '../../lib/ledger/errors.dynamodb';
import { localCommand } from '../../lib/local/cli-hint';
import { removalLine, removeResources } from '../../lib/local/tool-cleanup';
import { parseToolResourceName, type Tool } from '../../lib/local/tool-names';
import { emulatorClient } from './dynamodb';
import { PERSISTENT, readState, type PersistentPlace } from './stack/state';
import { withStackLock } from './stack-lock';

export type PruneCandidate = { kind: 'topic' | 'table'; name: string; tool: Tool; createdAtMs: number };

export type PruneOptions = { dryRun: boolean; olderThanMs: number };

const DAY_MS = 86_400_000;

/** `local:prune`'s options, without parsing: `parsePruneArgs` parses with it, the docs' test reads it. */
export function pruneProgram(): Command {
  return new Command('local:prune')
    .description("delete the topics and tables the project's own tools left on the running local stack")
    .option('--dry-run', 'only list them')
    .option('--older-than <age>', 'only those made longer ago than this: 30m, 12h, 2d (default 1d)');
}

/** `[--dry-run] [--older-than <n>m|h|d]` (default one day). */
export function parsePruneArgs(args: string[]): PruneOptions {
  const program = pruneProgram();
  const { opts } = parseArgv<{ dryRun?: boolean; olderThan?: string }>(program, args, refuseWithUsage(program));
  const options: PruneOptions = { dryRun: opts.dryRun === true, olderThanMs: DAY_MS };
  if (opts.olderThan !== undefined) {
    const m = /^(\d+)([mhd])$/.exec(opts.olderThan);
    if (!m) throw new ValidationError(`--older-than takes an age like 30m, 12h or 2d, not ${JSON.stringify(opts.olderThan)}`);
    options.olderThanMs = Number(m[1]) * { m: 60_000, h: 3_600_000, d: DAY_MS }[m[2] as 'm' | 'h' | 'd'];
  }
  return options;
}

/** Which of these topics and tables a tool made before `nowMs - olderThanMs` (pure). */
export function pruneCandidates(topics: string[], tables: string[], olderThanMs: number, nowMs: number): PruneCandidate[] {
  const pick = (kind: PruneCandidate['kind']) => (name: string) => {
    const made = parseToolResourceName(name, nowMs);
    return made && made.createdAtMs <= nowMs - olderThanMs ? [{ kind, name, ...made }] : [];
  };
  return [...topics.flatMap(pick('topic')), ...tables.flatMap(pick('table'))].sort((a, b) => a.createdAtMs - b.createdAtMs);
}

/** One line per candidate: what, which tool, when made. */
function candidateLine(c: PruneCandidate): string {
  return `${c.kind} ${c.name} (${c.tool}, created ${new Date(c.createdAtMs).toISOString()})`;
}

/** Every table the emulator at `endpoint` has, page by page. */
export async function listTables(dynamo: DynamoDBClient, endpoint: string): Promise<string[]> {
  const listing = translatingClient(dynamo, { endpoint }, "list the local stack's tables");
  const names: string[] = [];
  let start: string | undefined;
  do {
    const page = await listing.send(new ListTablesCommand({ ExclusiveStartTableName: start }));
    names.push(...(page.TableNames ?? []));
    start = page.LastEvaluatedTableName;
  } while (start);
  return names;
}

/**
 * Lists (and unless `dryRun` deletes) what the tools left on the persistent stack; `out` gets one
 * line per topic or table, `log` the summary. Needs the stack running.
 */
export async function prunePersistent(
  out: (line: string) => void,
  log: (line: string) => void,
  opts: PruneOptions & { place?: PersistentPlace; nowMs?: number },
): Promise<PruneCandidate[]> {
  const place = opts.place ?? PERSISTENT;
  return withStackLock(place.dir, 'pruned', () => pruneLocked(out, log, place, opts), { log });
}

async function pruneLocked(
  out: (line: string) => void,
  log: (line: string) => void,
  place: PersistentPlace,
  opts: PruneOptions & { nowMs?: number },
): Promise<PruneCandidate[]> {
  const state = readState(place.stateFile);
  if (!state) throw new PrerequisiteError(`no local stack is running: ${localCommand('up')} first (prune deletes through the broker)`);
  const admin = new Kafka({ clientId: 'local-prune', brokers: state.kafkaBrokers.split(','), logLevel: logLevel.NOTHING }).admin();
  const dynamo = emulatorClient(state.dynamodbEndpoint);
  try {
    await admin.connect();
    const [topics, tables] = await Promise.all([admin.listTopics(), listTables(dynamo, state.dynamodbEndpoint)]);
    const found = pruneCandidates(topics, tables, opts.olderThanMs, opts.nowMs ?? Date.now());
    found.forEach((c) => out(candidateLine(c)));
    const doomed = (kind: PruneCandidate['kind']) => found.filter((c) => c.kind === kind).map((c) => c.name);
    if (!opts.dryRun) {
      const removal = await removeResources({ topics: doomed('topic'), tables: doomed('table'), groups: [] }, { admin, dynamo });
      if (removal.errors.length) throw new PrerequisiteError(`local:prune: ${removalLine(removal)}`);
    }
    const age = `${Math.round((opts.olderThanMs / 3_600_000) * 10) / 10} h`;
    log(
      `${opts.dryRun ? 'would delete' : 'deleted'} ${doomed('topic').length} topic(s) and ${doomed('table').length} table(s) ` +
        `the project's tools left over ${age} ago; other topics and tables are not touched`,
    );
    return found;
  } catch (err) {
    if (err instanceof PrerequisiteError) throw err;
    throw new PrerequisiteError(
      `local:prune could not reach the local stack (${state.kafkaBrokers}, ` +
        `${state.dynamodbEndpoint}): ${String((err as Error).message ?? err)}`,
      {
        cause: err,
      },
    );
  } finally {
    await admin.disconnect().catch(() => undefined);
    dynamo.destroy();
  }
}
