/**
 * A middy middleware that publishes an invocation's Powertools metrics when it recorded any, after
 * the handler and on its error alike. Powertools' own `logMetrics` publishes always, and with
 * nothing recorded prints a warning line on every invocation: a processor invocation that has
 * nothing to count (a duplicate, a range already done) then logs nothing at all.
 */
import type middy from '@middy/core';
import type { Metrics } from '@aws-lambda-powertools/metrics';

/** Publishes the stored metrics if there are any; otherwise clears what the invocation set (dimensions). */
export function publishMetricsWhenAny(metrics: Metrics): middy.MiddlewareObj {
  const publish = async (): Promise<void> => {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
    else metrics.clearDimensions();
  };
  return { after: publish, onError: publish };
}
