/**
 * What `local:up` finds of a recorded stack before it decides: which recorded processes are still
 * the stack's own (see ownership.ts), and whether they answer. A service of ours that is alive but
 * slow to answer (a broker busy serving a benchmark, the emulator working through a queue) is waited
 * for, never replaced: replacing it would start a second emulator, or find the broker's own port
 * taken by the broker itself.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PrerequisiteError } from '../../lib/errors';
import { localCommand } from '../../lib/local/cli-hint';
import { dynamoReady } from './dynamodb';
import { kafkaReady } from './kafka';
import { isOurService, type RecordedService } from './ownership';
import { isAlive, sleep } from './process';

/** The part of a recorded stack state this needs (see StackState in stack/state.ts). */
export type RecordedStack = {
  kafkaBrokers: string;
  dynamodbEndpoint: string;
  pids: number[];
  kafkaPids?: number[];
  dynamodbPids?: number[];
};

const KAFKA_MARKER = 'kafka.Kafka';
const DYNAMODB_MARKER = 'moto_server.py';

const portOf = (address: string): number => Number(address.split(':').at(-1));

/** Each recorded process with its port and command-line marker; undefined for a state that does not say which is which. */
function recordedServices(s: RecordedStack): { kafka: RecordedService[]; dynamodb: RecordedService[] } | undefined {
  if (s.kafkaPids === undefined || s.dynamodbPids === undefined) return undefined;
  const brokers = s.kafkaBrokers.split(',');
  return {
    kafka: s.kafkaPids.map((pid, i) => ({ pid, port: portOf(brokers[i] ?? ''), marker: KAFKA_MARKER })),
    dynamodb: s.dynamodbPids.map((pid) => ({ pid, port: portOf(s.dynamodbEndpoint), marker: DYNAMODB_MARKER })),
  };
}

/** Recorded pids that are still the stack's own processes (a state without the split: those alive). */
export function ownPids(s: RecordedStack, isOurs: (r: RecordedService) => boolean = isOurService): number[] {
  const services = recordedServices(s);
  if (!services) return s.pids.filter(isAlive);
  return [...services.kafka, ...services.dynamodb].filter((r) => isOurs(r)).map((r) => r.pid);
}

export type AnswerOptions = {
  /** How long a live service of ours may take to answer before `local:up` gives up (never replaces it). */
  busyWaitMs: number;
  log: (line: string) => void;
};

/**
 * True once every one of `services` answers `probe`; false when one is not ours (dead, or its pid
 * reused), or dies while waited for. A live one that does not answer in `busyWaitMs` is an error.
 */
async function answers(
  what: string,
  services: RecordedService[],
  probe: (timeoutMs: number) => Promise<boolean>,
  logFile: string,
  o: AnswerOptions,
): Promise<boolean> {
  if (services.length === 0 || !services.every((s) => isOurService(s))) return false;
  if (await probe(2000).catch(() => false)) return true;
  const pids = services.map((s) => s.pid).join(', ');
  o.log(`${what} (pid ${pids}) runs but does not answer yet (busy?): waiting up to ${Math.round(o.busyWaitMs / 1000)} s`);
  const deadline = Date.now() + o.busyWaitMs;
  while (Date.now() < deadline) {
    if (!services.every((s) => isAlive(s.pid))) return false;
    if (await probe(10_000).catch(() => false)) return true;
    await sleep(500);
  }
  if (!services.every((s) => isAlive(s.pid))) return false;
  throw new PrerequisiteError(
    `the local stack's ${what} (pid ${pids}) runs but has not answered for ${Math.round(o.busyWaitMs / 1000)} s (see ${logFile}): ` +
      `${localCommand('down')} stops it, then ${localCommand('up')}`,
  );
}

/** Whether the recorded Kafka and emulator are the stack's own and answer (waiting for busy ones). */
export async function recordedServicesAnswer(prev: RecordedStack, kafkaDir: string, dynamoDir: string, o: AnswerOptions) {
  const services = recordedServices(prev);
  const nodes = prev.kafkaBrokers.split(',').length;
  if (!services) {
    // A state from before the split: alive and answering at once, or restarted.
    const alive = prev.pids.every(isAlive);
    return {
      kafkaUp: alive && (await kafkaReady(prev.kafkaBrokers, nodes).catch(() => false)),
      dynamoUp: alive && (await dynamoReady(prev.dynamodbEndpoint).catch(() => false)),
    };
  }
  const [kafkaUp, dynamoUp] = await Promise.all([
    answers(
      nodes > 1 ? 'Kafka cluster' : 'Kafka broker',
      services.kafka,
      (t) => kafkaReady(prev.kafkaBrokers, nodes, t),
      nodes > 1 ? join(kafkaDir, 'node-1', 'server.log') : join(kafkaDir, 'server.log'),
      o,
    ),
    answers('DynamoDB emulator', services.dynamodb, (t) => dynamoReady(prev.dynamodbEndpoint, t), join(dynamoDir, 'moto.log'), o),
  ]);
  return { kafkaUp, dynamoUp };
}

/** Every port a Kafka node dir's server.properties listens on (client, controller, secured). */
export function nodePorts(nodeDir: string): number[] {
  const file = join(nodeDir, 'server.properties');
  if (!existsSync(file)) return [];
  const listeners = /^listeners=(.*)$/m.exec(readFileSync(file, 'utf8'))?.[1] ?? '';
  return [...listeners.matchAll(/:(\d+)(?:,|$)/g)].map((m) => Number(m[1]));
}
