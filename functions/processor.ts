/**
 * Processor Lambda: invoked asynchronously by the planner with one range, or ad hoc with a range or
 * a `peek`. Thin: validate the payload, run the use case, publish metrics, return the result.
 */
import middy from '@middy/core';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { Context } from 'aws-lambda';
import { crc32cInUse } from '../lib/kafka/protocol/crc32c';
import { parseProcessorPayload } from '../lib/processor/payload';
import { peek } from '../lib/processor/peek';
import { processRange } from '../lib/processor/process-range';
import { awsRuntime, kafkaLogTo } from '../lib/runtime/aws';

const logger = new Logger({ serviceName: 'processor' });
const metrics = new Metrics({ namespace: process.env.METRICS_NAMESPACE ?? 'KafkaLambdaDirect', serviceName: 'processor' });

async function processor(event: unknown, context: Context, opts?: { signal?: AbortSignal }) {
  const rt = awsRuntime(process.env, { kafkaLog: kafkaLogTo(logger) });
  const req = parseProcessorPayload(event, rt.config);
  if (req.mode === 'peek') {
    const kafka = await rt.metadata.forStream(req.stream);
    const [o] = await kafka.fetchOffsets([{ topic: req.topic, partitions: [req.partition] }], req.stream.isolationLevel);
    const records = await peek(await rt.readerFor(req.stream), {
      ...req,
      latest: o?.latest ?? 0,
      isolationLevel: req.stream.isolationLevel,
    });
    return { peek: { topic: req.topic, partition: req.partition, offset: req.offset }, records };
  }
  const { stream, range } = req;
  logger.appendKeys({ stream: stream.id, range: `${range.topic}/${range.partition}/${range.from}-${range.until}` });
  // Stop handling new chunks once the safety share of the remaining time is used, to commit in time. Never
  // beyond processor.timeoutMs: the range lease (timeoutMs + margin) must outlast the work, whatever the function's timeout.
  const remainingMs = Math.min(context.getRemainingTimeInMillis?.() ?? stream.processor.timeoutMs, stream.processor.timeoutMs);
  const deadlineAtMs = Date.now() + remainingMs * stream.processor.safetyFactor;
  const result = await processRange(
    {
      ledger: rt.ledger,
      readerFor: (s) => rt.readerFor(s),
      handlerFor: (s) => rt.handlerFor(s),
      storeClock: rt.storeClock,
      destinationsFor: (s) => rt.destinationsFor(s),
      commitGroupOffset: (group, topic, partition, offset) => rt.commitGroupOffset(stream, group, topic, partition, offset),
      leaseToken: `${context.awsRequestId ?? 'local'}`,
    },
    { stream, range, deadlineAtMs, signal: opts?.signal },
  );
  metrics.addDimensions({ stream: stream.id });
  metrics.addMetric('RecordsProcessed', MetricUnit.Count, result.records);
  metrics.addMetric('DeadLetters', MetricUnit.Count, result.deadLetters);
  metrics.addMetric('RecordsFiltered', MetricUnit.Count, result.filtered);
  metrics.addMetric('RecordsExpired', MetricUnit.Count, result.expired);
  metrics.addMetric('RangesCompleted', MetricUnit.Count, result.status === 'done' ? 1 : 0);
  metrics.addMetric('RangesParked', MetricUnit.Count, result.status === 'parked' ? 1 : 0);
  metrics.addMetric('RangesPartial', MetricUnit.Count, result.status === 'partial' ? 1 : 0);
  metrics.addMetric('DataLossRecords', MetricUnit.Count, result.dataLoss ? result.dataLoss.until - result.dataLoss.from : 0);
  if (result.deliveries) {
    metrics.addMetric('DeadLettersDelivered', MetricUnit.Count, result.deliveries.delivered);
    metrics.addMetric('DeliveryFailures', MetricUnit.Count, result.deliveries.failed);
    // A destination that refused: the dead letter stays pending in the ledger and the planner retries it.
    if (result.deliveries.errors.length) logger.warn('failure destination delivery failed', { errors: result.deliveries.errors });
  }
  // crc32c: whether the CPU's instructions check the batches (the binding is packaged per architecture).
  logger.info('range processed', { ...result, crc32c: crc32cInUse() });
  return result;
}

export const handler = middy(processor, { timeoutEarlyInMillis: 2000 })
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(logMetrics(metrics));
