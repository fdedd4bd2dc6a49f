/** The CloudWatch namespace of the functions' metrics: one default for the functions, the alarms and the dashboard. */

/** The namespace when the stage sets none (serverless.yml's `metricsNamespace` param left empty). */
export const DEFAULT_METRICS_NAMESPACE = 'KafkaLambdaDirect';

/** The variable the stack gives both functions. */
export const METRICS_NAMESPACE_ENV = 'METRICS_NAMESPACE';

/** The namespace a function publishes to: the variable's, or the default when it is unset or empty. */
export function metricsNamespaceFrom(env: NodeJS.ProcessEnv): string {
  return env[METRICS_NAMESPACE_ENV] || DEFAULT_METRICS_NAMESPACE;
}
