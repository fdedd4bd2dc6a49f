/**
 * The ports a recorded stack listens on, and waiting until they are free once it has stopped.
 */
import { join } from 'node:path';
import { nodePorts } from '../observe';
import { describePortOwner } from '../ownership';
import { portInUse, sleep } from '../process';
import { PrerequisiteError } from '../../../lib/errors';
import { nodeDirs } from './kafka-dirs';
import type { StackState } from './state';

/** Every port the recorded stack listens on: its brokers' (client, controller, secured) and the emulator's. */
export function stackPorts(s: StackState): number[] {
  const kafkaDir = join(s.dir, 'kafka');
  const nodes = s.kafkaBrokers.split(',').length;
  const fromProps = nodeDirs(kafkaDir, nodes).flatMap(nodePorts);
  const recorded = [...s.kafkaBrokers.split(','), s.dynamodbEndpoint].map((a) => Number(a.split(':').at(-1)));
  return [...new Set([...recorded, ...fromProps])].filter((p) => Number.isInteger(p) && p > 0);
}

/** Resolves once nothing listens on `ports`; names the port and its holder after `timeoutMs`. */
export async function portsFree(ports: number[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const taken = (await Promise.all(ports.map(async (p) => ((await portInUse(p)) ? p : undefined)))).filter((p) => p !== undefined);
    if (taken.length === 0) return;
    if (Date.now() > deadline) {
      const who = describePortOwner(taken[0] as number);
      throw new PrerequisiteError(
        `the local stack stopped, but port ${taken[0]} is still taken${who ? ` by ${who}` : ''} after ${timeoutMs / 1000} s`,
      );
    }
    await sleep(200);
  }
}
