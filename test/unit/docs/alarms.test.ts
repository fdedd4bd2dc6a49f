/**
 * The alarm tables of docs/deploy.md ("Alarms and dashboard") list exactly the alarms the stack
 * builds and the metrics each reads. The alarms come from the builder the stack calls
 * (`observability` in infra/cfn/alarms.ts), for a stage with every optional alarm on (the schedule
 * enabled) and one stream, continuous (its segments-missing alarm); the doc names a stream's alarm `<stream>-<kind>`.
 */
import { parseDeploymentConfig } from '../../../lib/config/schema';
import { PLANNER_METRICS } from '../../../lib/planner/metrics';
import { PROCESSOR_METRICS } from '../../../lib/processor/invocation-metrics';
import { observability } from '../../../infra/cfn/alarms';
import { deploySettings } from '../../support/deploy-settings';
import { codeSpans, markdownSection, markdownTable } from '../../support/markdown-table';

const DOC = 'docs/deploy.md';
const HEADING = 'Alarms and dashboard';
const STREAM = 'orders';
const PREFIX = 'svc-test-';

type MetricRef = { Namespace: unknown; MetricName: string; Dimensions?: Array<{ Name: string; Value: unknown }> };
type Alarm = { name: string; metrics: string[] };

/** How the doc names a metric's source: the function for custom metrics, else the AWS service. */
function sourceOf(m: MetricRef): string {
  const service = m.Dimensions?.find((d) => d.Name === 'service')?.Value;
  if (typeof service === 'string') return service;
  return String(m.Namespace).replace(/^AWS\//, '');
}

/** The stack's alarms: name (without `<service>-<stage>-`, the stream's id as `<stream>`) and `<source> <metric>` of each metric read. */
function builtAlarms(): Alarm[] {
  const settings = deploySettings();
  const config = parseDeploymentConfig(
    { ledgerTable: 'svc-test-ledger', streams: [{ id: STREAM, kafka: { brokers: ['localhost:9092'] }, topics: ['t'], continuous: {} }] },
    'test',
  );
  return Object.values(observability(settings, config).Resources)
    .filter((r) => r.Type === 'AWS::CloudWatch::Alarm')
    .map((r) => {
      const p = r.Properties as Record<string, unknown> & MetricRef & { AlarmName: string };
      const refs = p.MetricName
        ? [p]
        : (p.Metrics as Array<{ MetricStat?: { Metric: MetricRef } }>).flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric] : []));
      return {
        name: p.AlarmName.slice(PREFIX.length).replace(`${STREAM}-`, '<stream>-'),
        metrics: refs.map((m) => `${sourceOf(m)} ${m.MetricName}`).sort(),
      };
    });
}

/**
 * The doc's alarms: the first cell's code span, and from the metric cell each `;`-separated part's
 * source (its first word: `planner`, `processor`, `Lambda`, `SQS`) with the metric names in its code
 * spans (for Lambda and SQS the first span; the others name the function or queue).
 */
function documentedAlarms(): Alarm[] {
  const tables = [
    markdownTable(DOC, HEADING, { after: 'Per stream', columns: ['alarm', 'metric(s)'] }),
    markdownTable(DOC, HEADING, { after: 'Per stack', columns: ['alarm', 'metric'] }),
  ];
  return tables.flatMap((t) =>
    t.rows.map((r) => ({
      name: codeSpans(r[0] as string)[0] as string,
      metrics: (r[1] as string)
        .split(';')
        .flatMap((part) => {
          const source = part.trim().split(/\s+/)[0] as string;
          const spans = codeSpans(part);
          return (source === 'planner' || source === 'processor' ? spans : spans.slice(0, 1)).map((name) => `${source} ${name}`);
        })
        .sort(),
    })),
  );
}

describe('docs: alarm tables (docs/deploy.md "Alarms and dashboard")', () => {
  const built = builtAlarms();

  it('list every alarm the stack builds, and no other', () => {
    expect(documentedAlarms().map((a) => a.name)).toEqual(built.map((a) => a.name));
  });

  it('name the metrics each alarm reads', () => {
    const byName = new Map(built.map((a) => [a.name, a.metrics]));
    for (const doc of documentedAlarms())
      expect({ alarm: doc.name, metrics: doc.metrics }).toEqual({ alarm: doc.name, metrics: byName.get(doc.name) });
  });

  it('count them as the stack does', () => {
    const text = markdownSection(DOC, HEADING);
    const perStream = built.filter((a) => a.name.startsWith('<stream>-')).length;
    const [, total, streams, stack] = /has (\d+) alarms \((\d+) \+ (\d+)\)/.exec(text) ?? [];
    expect([Number(total), Number(streams), Number(stack)]).toEqual([built.length, perStream, built.length - perStream]);
  });

  it("read only metrics the functions publish (the planner's and the processor's lists)", () => {
    const published = new Set([
      ...Object.keys(PLANNER_METRICS).map((m) => `planner ${m}`),
      ...PROCESSOR_METRICS.map((m) => `processor ${m}`),
    ]);
    const custom = built.flatMap((a) => a.metrics).filter((m) => /^(planner|processor) /.test(m));
    expect(custom.filter((m) => !published.has(m))).toEqual([]);
  });
});
