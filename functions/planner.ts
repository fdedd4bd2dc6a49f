/**
 * Planner Lambda: runs on an EventBridge schedule or ad hoc ({"dryRun": true, "streams": [...]}).
 * Thin: validate the payload, run the planner use case, publish metrics, return the reports.
 */
import middy from '@middy/core';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { Context } from 'aws-lambda';
import { AppError } from '../lib/errors';
import { processorConcurrencyFromEnv } from '../lib/planner/concurrency-cap';
import { recordPlannerMetrics } from '../lib/planner/metrics';
import { parsePlannerPayload } from '../lib/planner/payload';
import { runPlanner } from '../lib/planner/run';
import { awsRuntime, kafkaLogTo } from '../lib/runtime/aws';

const logger = new Logger({ serviceName: 'planner' });
const metrics = new Metrics({ namespace: process.env.METRICS_NAMESPACE ?? 'KafkaLambdaDirect', serviceName: 'planner' });

/** Raised after all streams ran when at least one failed, so Lambda records the invocation as failed. */
export class PlannerRunFailed extends AppError {
  constructor(message: string) {
    super('PLANNER_FAILED', message);
  }
}

async function plan(event: unknown, context: Context) {
  const rt = awsRuntime(process.env, { kafkaLog: kafkaLogTo(logger) });
  const req = parsePlannerPayload(event, rt.config);
  // A lease outlives the function timeout so a hard-killed run cannot overlap the next one.
  const plannerLeaseMs = Math.max(context.getRemainingTimeInMillis?.() ?? 60_000, 1000) + 10_000;
  const reports = await runPlanner(
    {
      ledger: rt.ledger,
      metadataFor: (s) => rt.metadata.forStream(s),
      dispatcher: req.dryRun ? { dispatch: async () => [] } : rt.dispatcher(),
      plannerLeaseMs,
      ownerToken: `${context.awsRequestId ?? 'local'}:${Date.now()}`,
      // Shared by every configured stream, also in an ad hoc run of a few: the scheduled runs keep planning the others.
      processorConcurrency: processorConcurrencyFromEnv(process.env, rt.config.streams.length),
    },
    // Store time: the planner lease and range lease expiry are judged on DynamoDB's clock.
    { streams: req.streams, dryRun: req.dryRun, nowMs: await rt.storeClock() },
  );
  for (const r of reports) {
    logger.info('planner run', {
      stream: r.stream,
      status: r.status,
      reason: r.reason,
      rangesPlanned: r.rangesPlanned,
      recordsPlanned: r.recordsPlanned,
      inFlight: r.inFlight,
      dispatchFailures: r.dispatchFailures,
      dataLoss: r.dataLoss,
      partitions: r.partitions,
    });
    // Re-created topics, missing topics and brokers without topic ids are worth warnings of their own.
    if (r.recreated.length) logger.warn('topic re-created', { stream: r.stream, closedIncarnations: r.recreated });
    for (const w of r.warnings) logger.warn(w, { stream: r.stream });
  }
  if (!req.dryRun) recordPlannerMetrics(metrics, reports);
  const failed = reports.filter((r) => r.status === 'failed');
  if (failed.length) throw new PlannerRunFailed(failed.map((r) => `${r.stream}: ${r.reason}`).join('; '));
  return { dryRun: req.dryRun, streams: reports };
}

export const handler = middy(plan).use(injectLambdaContext(logger)).use(logMetrics(metrics));
