/**
 * Processor Lambda: invoked asynchronously by the planner with one range or several small ones (a
 * shared invocation), or ad hoc with a range or a `peek`. Thin: validate the payload, run the use
 * case, publish metrics, return the result. At the default log level an invocation logs its metrics
 * line only (counts above zero); `POWERTOOLS_LOG_LEVEL=DEBUG` adds a line with each range's outcome.
 */
import middy from '@middy/core';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { crc32cInUse } from '../lib/kafka/protocol/crc32c';
import { parseProcessorPayload } from '../lib/processor/payload';
import { rangesOfPayload } from '../lib/ranges';
import { peek } from '../lib/processor/peek';
import { processRanges } from '../lib/processor/process-range';
import { countsToPublish, invocationCounts, rangesSummary } from '../lib/processor/invocation-metrics';
import { publishMetricsWhenAny } from '../lib/runtime/publish-metrics';
import { metricsNamespaceFrom } from '../lib/runtime/metrics-namespace';
import { awsRuntime, kafkaLogTo } from '../lib/runtime/aws';
import { freshConnections } from '../lib/runtime/fresh-connections';

const logger = new Logger({ serviceName: 'processor' });
const metrics = new Metrics({ namespace: metricsNamespaceFrom(process.env), serviceName: 'processor' });

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
  const { stream } = req;
  const ranges = req.mode === 'range' ? [req.range] : req.ranges;
  // Stop handling new chunks once the safety share of the remaining time is used, to commit in time. Never
  // beyond processor.timeoutMs: the range lease (timeoutMs + margin) must outlast the work, whatever the function's timeout.
  const remainingMs = Math.min(context.getRemainingTimeInMillis?.() ?? stream.processor.timeoutMs, stream.processor.timeoutMs);
  const deadlineAtMs = Date.now() + remainingMs * stream.processor.safetyFactor;
  const results = await processRanges(
    {
      ledger: rt.ledger,
      readerFor: (s) => rt.readerFor(s),
      handlerFor: (s) => rt.handlerFor(s),
      storeClock: rt.storeClock,
      destinationsFor: (s) => rt.destinationsFor(s),
      commitGroupOffset: (group, topic, partition, offset) => rt.commitGroupOffset(stream, group, topic, partition, offset),
      createReader: (s) => rt.createReader(s),
      // A continuous segment invokes its successor: this function, asynchronously, as the planner does.
      handOver: async (payload) => {
        const successor = rangesOfPayload(payload);
        const results = await rt.segmentDispatcher(context.functionName).dispatch(successor, { invocations: [successor.map((_, i) => i)] });
        return results.every((r) => r.ok);
      },
    },
    { stream, ranges, deadlineAtMs, signal: opts?.signal, single: req.mode === 'range' },
  );
  metrics.addDimensions({ stream: stream.id });
  for (const [name, n] of countsToPublish(invocationCounts(results))) metrics.addMetric(name, MetricUnit.Count, n);
  const errors = results.flatMap((r) => r.deliveries?.errors ?? []);
  // A destination that refused: the dead letter stays pending in the ledger and the planner retries it.
  if (errors.length) logger.warn('failure destination delivery failed', { errors });
  const failed = results.filter((r) => r.status === 'failed' || r.status === 'refused');
  if (failed.length) logger.warn('ranges not processed', { ranges: failed.map((r) => `${rangesSummary([r])} ${r.reason ?? ''}`) });
  // crc32c: whether the CPU's instructions check the batches (the binding is packaged per architecture).
  logger.debug('ranges processed', { stream: stream.id, ranges: rangesSummary(results), crc32c: crc32cInUse() });
  return req.mode === 'range' ? results[0] : { ranges: results };
}

export const handler = middy(processor, { timeoutEarlyInMillis: 2000 })
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(freshConnections(logger))
  .use(publishMetricsWhenAny(metrics));
