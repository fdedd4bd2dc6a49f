/** The planner's invocation payload: an EventBridge schedule, or an operator's ad hoc request. */
import { z } from 'zod';
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

/** What an invocation is to do: one run (ad hoc), or a loop of runs (the schedule). */
export type PlannerRequest = { dryRun: boolean; streams: StreamConfig[]; loop: boolean };

/** EventBridge rules deliver this envelope; its `detail` carries nothing for us. */
function isScheduledEvent(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { source?: unknown }).source === 'aws.events' && 'detail-type' in e;
}

/** Validates a planner payload against the deployment; throws ValidationError naming what is wrong. */
export function parsePlannerPayload(event: unknown, config: DeploymentConfig): PlannerRequest {
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
