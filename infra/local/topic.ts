/**
 * `npm run local:topic -- <topic> [--partitions n] [--produce <file>]`: creates a topic on the local
 * broker (KAFKA_BROKERS, else the local stack, started or reused as `npm start` does) if it is missing, and produces the records
 * of a JSON-lines file into it, one `{"key": "...", "value": <any JSON>}` per line (the value is
 * written as its JSON text; a string value as the string itself). Prints one line of what it did.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { HelpRequestedError, parseArgv, refuseWithUsage, wholeNumberOption } from '../../lib/cli/args';
import { AppError, ValidationError } from '../../lib/errors';
import { KAFKAJS_RETRY } from '../../lib/kafka/client';
import { upPersistent } from './stack/persistent';

type Line = { key?: string | null; value?: unknown };

function recordsOf(file: string): Array<{ key: string | null; value: string | null }> {
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((l, i) => [l.trim(), i + 1] as const)
    .filter(([l]) => l !== '')
    .map(([l, n]) => {
      let doc: Line;
      try {
        doc = JSON.parse(l) as Line;
      } catch {
        throw new ValidationError(`${file}:${n}: not JSON (one {"key", "value"} object per line)`);
      }
      const value =
        doc.value === undefined || doc.value === null ? null : typeof doc.value === 'string' ? doc.value : JSON.stringify(doc.value);
      return { key: doc.key ?? null, value };
    });
}

/** Waits until every partition of a fresh topic has a leader that answers (kafkajs's waitForLeaders fails on other topics' state). */
async function untilLeaders(admin: Admin, topic: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await admin.fetchTopicOffsets(topic);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** `local:topic`'s arguments and options, without parsing (`usage` names the command): the docs' test reads it. */
export function topicProgram(usage = 'npm run local:topic --'): Command {
  return new Command(usage)
    .description('create a topic on the local broker if it is missing, and produce a JSON-lines file into it')
    .argument('<topic>', 'the topic')
    .addOption(wholeNumberOption('--partitions <n>', 'partitions of a topic it creates', 1))
    .option('--produce <file.jsonl>', 'records to produce, one {"key", "value"} object per line');
}

/** Creates the topic if missing and produces the file into it; resolves to the line saying what it did. */
async function topicCommand(argv: string[], usage: string): Promise<string> {
  const program = topicProgram(usage);
  const { opts, operands } = parseArgv<{ partitions: number; produce?: string }>(program, argv, refuseWithUsage(program));
  const [topic] = operands as [string];
  const { partitions } = opts;
  const brokers = process.env.KAFKA_BROKERS ?? (await upPersistent((l) => process.stderr.write(`[local] ${l}\n`))).kafkaBrokers;
  const messages = opts.produce !== undefined ? recordsOf(opts.produce) : [];
  const kafka = new Kafka({ clientId: 'local-topic', brokers: brokers.split(','), logLevel: logLevel.NOTHING, retry: KAFKAJS_RETRY });
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  try {
    await admin.connect();
    const created = await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: false });
    await untilLeaders(admin, topic);
    if (messages.length) {
      await producer.connect();
      for (let i = 0; i < messages.length; i += 1000) await producer.send({ topic, messages: messages.slice(i, i + 1000) });
    }
    const produced = messages.length ? `; produced ${messages.length} records` : '';
    return `topic ${topic}: ${created ? `created with ${partitions} partition(s)` : 'exists'}${produced}`;
  } finally {
    await producer.disconnect().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  }
}

/** `local:topic` (or `kafka-direct local topic`): resolves to the exit code, the outcome printed in one line. */
export async function runTopic(argv: string[], usage = 'npm run local:topic --'): Promise<number> {
  try {
    process.stdout.write(`${await topicCommand(argv, usage)}\n`);
    return 0;
  } catch (err) {
    if (err instanceof HelpRequestedError) {
      process.stdout.write(err.help);
      return 0;
    }
    process.stderr.write(err instanceof AppError ? `error: ${err.message}\n` : `error: ${(err as Error)?.message ?? String(err)}\n`);
    return 1;
  }
}

if (require.main === module) {
  void runTopic(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
