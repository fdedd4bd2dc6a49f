/**
 * Where a stack's Kafka keeps its data on disk: one broker's dir, or `node-1`..`node-N` for a
 * cluster, and how many formatted nodes are found there.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const formatted = (dir: string): boolean => existsSync(join(dir, 'server.properties')) && existsSync(join(dir, 'data', 'meta.properties'));

/** Formatted Kafka node dirs under `kafkaDir`: 1 for a single broker, N for `node-1`..`node-N`, 0 for none. */
export function kafkaDataNodes(kafkaDir: string): number {
  if (formatted(kafkaDir)) return 1;
  let n = 0;
  while (formatted(join(kafkaDir, `node-${n + 1}`))) n++;
  return n;
}

export function nodeDirs(kafkaDir: string, nodes: number): string[] {
  return nodes === 1 ? [kafkaDir] : Array.from({ length: nodes }, (_, i) => join(kafkaDir, `node-${i + 1}`));
}
