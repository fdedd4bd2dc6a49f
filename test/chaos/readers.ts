/** Range readers for the chaos scenarios, pooled per environment. */
import { createKafkajsRangeReader } from '../../lib/kafka/range-reader.kafkajs';
import type { RangeReader } from '../../lib/ports/range-reader';
import type { ChaosEnv } from './harness';

/** A range reader from the environment's pool (as a warm Lambda container has its own), or a new one. */
export function takeReader(env: ChaosEnv): RangeReader {
  const r = env.readers.pop();
  if (r) return r;
  const fresh = createKafkajsRangeReader(env.readerKafka ?? env.kafka);
  env.allReaders.push(fresh);
  return fresh;
}
