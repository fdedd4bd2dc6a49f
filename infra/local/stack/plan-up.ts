/**
 * What `local:up` does, decided purely: from what it observed of the recorded stack (`Observed`), the
 * plan for each service (`planUp`: reuse, restart on its data or start fresh), and the lines that
 * report what survived and what was lost (`upReport`).
 */
import { localCommand } from '../../../lib/local/cli-hint';
import type { StackState } from './state';

/** What `local:up` finds before deciding: the recorded stack, which of its services answer, and the Kafka data on disk. */
export type Observed = {
  prev?: StackState;
  /** Kafka nodes asked for. */
  kafkaNodes: number;
  kafkaUp: boolean;
  dynamoUp: boolean;
  /** Recorded pids still the stack's own processes (alive, on their ports): the only ones ever stopped. */
  ownPids: number[];
  /** Formatted Kafka node dirs found under the stack's dir (0: none, a fresh broker is needed). */
  kafkaDataNodes: number;
};

/** What `local:up` does with each service. */
export type UpPlan = {
  kafka: 'reuse' | 'restart' | 'fresh';
  dynamodb: 'reuse' | 'start';
  /** Recorded processes to stop first: only the stack's own (a dead one's pid may be another process's now). */
  stopPids: number[];
  /** Why the Kafka data is deleted first, when it is. */
  wipeReason?: string;
};

/** Decides what to keep, restart or start fresh (pure; the I/O is in `upPersistent`). */
export function planUp(o: Observed): UpPlan {
  const plan = planServices(o);
  return { ...plan, stopPids: plan.stopPids.filter((pid) => o.ownPids.includes(pid)) };
}

function planServices(o: Observed): UpPlan {
  const { prev } = o;
  const recordedNodes = prev ? prev.kafkaBrokers.split(',').length : o.kafkaDataNodes;
  const dataNodes = o.kafkaDataNodes || recordedNodes;
  if (recordedNodes > 0 && dataNodes !== o.kafkaNodes) {
    return {
      kafka: 'fresh',
      dynamodb: 'start',
      stopPids: prev?.pids ?? [],
      wipeReason: `the local stack has ${dataNodes} Kafka node${dataNodes === 1 ? '' : 's'}, not ${o.kafkaNodes}`,
    };
  }
  const kafka = prev && o.kafkaUp ? 'reuse' : o.kafkaDataNodes > 0 ? 'restart' : 'fresh';
  const dynamodb = prev && o.dynamoUp ? 'reuse' : 'start';
  if (!prev || (kafka === 'reuse' && dynamodb === 'reuse')) return { kafka, dynamodb, stopPids: [] };
  if (prev.kafkaPids === undefined || prev.dynamodbPids === undefined) {
    // Recorded before the state named each service's processes: a live one cannot be told apart, so stop all.
    return { kafka: kafka === 'reuse' ? 'restart' : kafka, dynamodb: 'start', stopPids: prev.pids };
  }
  const stopPids = [...(kafka === 'reuse' ? [] : prev.kafkaPids), ...(dynamodb === 'reuse' ? [] : prev.dynamodbPids)];
  return { kafka, dynamodb, stopPids };
}

/** What `local:up` found out while carrying out its plan, for the report. */
export type UpOutcome = {
  /** A stack was recorded (else this follows a `local:down`, or it is the first start). */
  hadState: boolean;
  /** User topics on the broker once it is up. */
  topics: number;
  kafkaNodes: number;
  /** New endpoints that differ from the recorded ones (the old port was taken). */
  movedTo?: { kafkaBrokers?: string; dynamodbEndpoint?: string };
};

const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

/** The one or two lines that say what survived and what was lost (pure). */
export function upReport(plan: UpPlan, out: UpOutcome): string[] {
  const kafkaName = out.kafkaNodes > 1 ? 'Kafka cluster' : 'Kafka broker';
  const topicsKept = `Kafka topics kept (${plural(out.topics, 'topic')})`;
  const lines: string[] = [];
  if (plan.wipeReason) {
    lines.push(`${plan.wipeReason}: starting a fresh stack; its Kafka data and DynamoDB tables are gone`);
  } else if (plan.kafka === 'reuse' && plan.dynamodb === 'reuse') {
    lines.push('local stack already running');
  } else if (plan.dynamodb === 'start' && (out.hadState || plan.kafka === 'restart')) {
    const lost = out.hadState
      ? 'DynamoDB emulator had stopped: its tables (ledgers, sinks) are gone'
      : 'DynamoDB emulator keeps its tables in memory: those from before local:down (ledgers, sinks) are gone';
    if (plan.kafka === 'fresh') {
      lines.push(`${lost}; ${kafkaName} had stopped and its data dir is gone: starting a fresh stack (no topics, no tables)`);
    } else {
      const how = plan.kafka === 'restart' ? `, ${kafkaName} restarted on its data dir` : '';
      lines.push(`${lost}; Kafka topics kept (${plural(out.topics, 'topic')}${how})`);
      // A lost ledger with kept topics replays into a kept sink only if the sink survived: it did not.
      if (out.topics > 0) {
        lines.push(
          'streams start again from their startingOffsets (the ledger is new); their sink tables were on the emulator too, ' +
            'so no record is applied twice into a kept sink',
        );
      }
    }
  } else if (plan.kafka === 'restart') {
    lines.push(`${kafkaName} had stopped: restarted on its data dir and ports; ${topicsKept}; DynamoDB tables kept`);
  } else if (plan.kafka === 'fresh' && out.hadState) {
    lines.push(
      `${kafkaName} had stopped and its data dir is gone: a fresh one has no topics; DynamoDB tables kept, ` +
        `but their ledgers name topics that are gone (${localCommand('reset')} starts both fresh)`,
    );
  }
  if (out.movedTo?.kafkaBrokers) lines.push(`KAFKA_BROKERS is now ${out.movedTo.kafkaBrokers} (a new port: export it again)`);
  if (out.movedTo?.dynamodbEndpoint) lines.push(`DYNAMODB_ENDPOINT is now ${out.movedTo.dynamodbEndpoint} (a new port: export it again)`);
  return lines;
}
