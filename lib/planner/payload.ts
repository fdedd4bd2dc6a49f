/** The planner's invocation payload: an EventBridge schedule, or an operator's ad hoc request. */
import { z } from 'zod';
import type { ChainTick } from '../ports/tick-queue';
import type { DeploymentConfig, StreamConfig } from '../config/schema';
import { ValidationError } from '../errors';
import { invalidPlannerPayloadMessage, unknownPlannerStreamsMessage } from './messages';

const adHocSchema = z.strictObject({
  /** Return the plan without writing anything or dispatching. */
  dryRun: z.boolean().default(false),
  /** Plan only these stream ids (default: all). */
  streams: z.array(z.string().min(1)).min(1).optional(),
  /** Tick every trigger interval for as long as the invocation runs (what the schedule sends), not once. */
  loop: z.boolean().default(false),
});

/** The body of a tick chain's queue message (lib/ports/tick-queue.ts `ChainTick`). */
const chainTickSchema = z.strictObject({
  stream: z.string().min(1),
  seq: z.number().int().min(1),
  dueMs: z.number().int().min(0),
  lastTickAtMs: z.number().int().min(0).optional(),
});

/** What an invocation is to do: one run (ad hoc), or a loop of runs (the schedule). */
export type PlannerRequest = { dryRun: boolean; streams: StreamConfig[]; loop: boolean; chain?: undefined };

/** A tick chain's message (the queue's event), with the stream's config: undefined when it is no longer configured. */
export type ChainTickRequest = { tick: ChainTick; stream: StreamConfig | undefined };

/** What a tick chain's invocation carries: its messages (one, as the queue's batch size is). */
export type ChainRequest = { chain: ChainTickRequest[] };

/** EventBridge rules deliver this envelope; its `detail` carries nothing for us. */
function isScheduledEvent(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { source?: unknown }).source === 'aws.events' && 'detail-type' in e;
}

/** An SQS event (what the tick queue's event source mapping delivers). */
function isQueueEvent(e: unknown): e is { Records: { eventSource?: unknown; body?: unknown }[] } {
  const records = (e as { Records?: unknown } | null)?.Records;
  return Array.isArray(records) && records.length > 0 && records.every((r) => (r as { eventSource?: unknown })?.eventSource === 'aws:sqs');
}

/** Validates a planner payload against the deployment; throws ValidationError naming what is wrong. */
export function parsePlannerPayload(event: unknown, config: DeploymentConfig): PlannerRequest | ChainRequest {
  if (isQueueEvent(event)) return parseChainEvent(event, config);
  // An EventBridge rule's envelope carries no input of ours: it is the schedule, which loops.
  const raw = event === undefined || event === null ? {} : isScheduledEvent(event) ? { loop: true } : event;
  const res = adHocSchema.safeParse(raw);
  if (!res.success) {
    const issues = res.error.issues.map((i) => `${i.path.join('.') || 'payload'}: ${i.message}`).join('; ');
    throw new ValidationError(invalidPlannerPayloadMessage(issues));
  }
  const known = new Map(config.streams.map((s) => [s.id, s]));
  const unknown = (res.data.streams ?? []).filter((id) => !known.has(id));
  if (unknown.length) {
    throw new ValidationError(unknownPlannerStreamsMessage(unknown, [...known.keys()]));
  }
  const streams = res.data.streams ? res.data.streams.map((id) => known.get(id) as StreamConfig) : config.streams;
  if (res.data.loop && res.data.dryRun)
    throw new ValidationError('invalid planner payload: a dry run plans once; "loop" and "dryRun" do not go together');
  return { dryRun: res.data.dryRun, streams, loop: res.data.loop };
}

/**
 * The tick chain's messages. A message naming a stream no longer configured is kept (its tick ends
 * the chain quietly: the config changed); one whose body is not a tick is refused, naming it.
 */
function parseChainEvent(event: { Records: { body?: unknown; messageId?: unknown }[] }, config: DeploymentConfig): ChainRequest {
  const known = new Map(config.streams.map((s) => [s.id, s]));
  return {
    chain: event.Records.map((r) => {
      let body: unknown;
      try {
        body = JSON.parse(String(r.body));
      } catch {
        body = undefined;
      }
      const res = chainTickSchema.safeParse(body);
      if (!res.success) {
        const issues = res.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
        throw new ValidationError(invalidPlannerPayloadMessage(`tick message ${String(r.messageId)} is not a tick (${issues})`));
      }
      return { tick: res.data, stream: known.get(res.data.stream) };
    }),
  };
}
