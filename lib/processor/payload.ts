/** The processor's invocation payload: one planned range, several (a shared invocation), or a `peek` that reads without committing. */
import { z } from 'zod';
import type { DeploymentConfig, StreamConfig } from '../config/schema';
import { ValidationError } from '../errors';
import { MAX_RANGES_PER_INVOCATION, rangeIdentity, type RangePayload } from '../ranges';
import { invalidProcessorPayloadMessage, peekStreamRequiredMessage, unknownProcessorStreamMessage } from './messages';
import { requirePeekTopic } from './peek';

const offset = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const rangeFields = {
  topic: z.string().min(1),
  partition: z.number().int().min(0),
  from: offset,
  until: offset,
  incarnation: z.number().int().min(1).optional(),
  shard: z.string().min(1).max(64).optional(),
  topicId: z.string().min(1).max(64).optional(),
  handover: z.strictObject({ from: z.string().min(1).max(64), atMs: z.number().int().min(0) }).optional(),
  streamPartitions: z.number().int().min(1).max(1_000_000).optional(),
};
const orderedRange = <T extends { from: number; until: number }>(r: T) => r.from < r.until;
const rangeSchema = z
  .strictObject({ stream: z.string().min(1), ...rangeFields })
  .refine(orderedRange, { message: 'from must be below until', path: ['until'] });
const rangesSchema = z
  .strictObject({
    stream: z.string().min(1),
    ranges: z
      .array(z.strictObject(rangeFields).refine(orderedRange, { message: 'from must be below until', path: ['until'] }))
      .min(1)
      .max(MAX_RANGES_PER_INVOCATION),
  })
  .refine((p) => new Set(p.ranges.map(rangeIdentity)).size === p.ranges.length, {
    message: 'names a range twice',
    path: ['ranges'],
  });
const peekSchema = z.strictObject({
  peek: z.strictObject({
    stream: z.string().min(1).optional(),
    topic: z.string().min(1),
    partition: z.number().int().min(0),
    offset,
    count: z.number().int().min(1).max(1000).default(10),
  }),
});

export type ProcessorRequest =
  | { mode: 'range'; stream: StreamConfig; range: RangePayload }
  | { mode: 'ranges'; stream: StreamConfig; ranges: RangePayload[] }
  | { mode: 'peek'; stream: StreamConfig; topic: string; partition: number; offset: number; count: number };

function fail(issues: z.core.$ZodIssue[]): never {
  const text = issues.map((i) => `${i.path.join('.') || 'payload'}: ${i.message}`).join('; ');
  throw new ValidationError(invalidProcessorPayloadMessage(text));
}

function streamOf(config: DeploymentConfig, id: string | undefined): StreamConfig {
  if (id === undefined) {
    if (config.streams.length === 1) return config.streams[0] as StreamConfig;
    throw new ValidationError(peekStreamRequiredMessage(config.streams.map((s) => s.id)));
  }
  const s = config.streams.find((x) => x.id === id);
  if (!s)
    throw new ValidationError(
      unknownProcessorStreamMessage(
        id,
        config.streams.map((x) => x.id),
      ),
    );
  return s;
}

/** Validates a processor payload; throws ValidationError naming the field, before any state is touched. */
export function parseProcessorPayload(event: unknown, config: DeploymentConfig): ProcessorRequest {
  if (typeof event === 'object' && event !== null && 'peek' in event) {
    const res = peekSchema.safeParse(event);
    if (!res.success) fail(res.error.issues);
    const p = res.data.peek;
    const stream = streamOf(config, p.stream);
    requirePeekTopic(stream, p.topic);
    return { mode: 'peek', stream, topic: p.topic, partition: p.partition, offset: p.offset, count: p.count };
  }
  if (typeof event === 'object' && event !== null && 'ranges' in event) {
    const res = rangesSchema.safeParse(event);
    if (!res.success) fail(res.error.issues);
    const { stream, ranges } = res.data;
    return { mode: 'ranges', stream: streamOf(config, stream), ranges: ranges.map((r) => ({ stream, ...r })) };
  }
  const res = rangeSchema.safeParse(event);
  if (!res.success) fail(res.error.issues);
  return { mode: 'range', stream: streamOf(config, res.data.stream), range: res.data };
}
