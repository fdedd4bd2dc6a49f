/**
 * Stream filters at package time: `sls package` loads the streams config through the same parser
 * as the functions, so a pattern Lambda would refuse fails packaging with the config loader's own
 * line (naming streams[i].filters[j]) and exit code 1, and valid patterns reach the processor as written.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseDeploymentConfig } from '../../lib/config/schema';
import { runSlsPackage, slsPackage, type Packaged } from './package';

const FILTERS = [{ value: { type: ['order'], amount: [{ numeric: ['>', 0] }] } }, { headers: { priority: ['high'] } }];

function config(filters: unknown[]): { ledgerTable: string; streams: unknown[] } {
  return {
    ledgerTable: 'unused',
    streams: [
      {
        id: 'orders',
        kafka: { brokers: ['kafka-1.example.com:9093'], ssl: true },
        topics: ['orders'],
        processor: { timeoutMs: 300000 },
        handler: { module: 'noop', mode: 'at-least-once' },
        filters,
      },
    ],
  };
}

describe('sls package with stream filters', () => {
  it('refuses a pattern Lambda refuses, with the line the config loader gives, and writes no template', () => {
    const bad = config([FILTERS[0], { value: { path: [{ wildcard: '*/lib/*' }] } }]);
    let loaderMessage = '';
    try {
      parseDeploymentConfig(bad, 'STREAMS_CONFIG');
    } catch (e) {
      loaderMessage = (e as Error).message;
    }
    expect(loaderMessage).toBe(
      'invalid config (STREAMS_CONFIG): streams[0].filters[1].value.path[0].wildcard: "wildcard" is not supported: ' +
        'Lambda event filtering does not support wildcard matching (EventBridge rules only)',
    );
    const run = runSlsPackage('filters', 'us-east-1', { streamsConfig: JSON.stringify(bad) });
    try {
      expect(run.status).toBe(1);
      const lines = `${run.stdout}${run.stderr}`.split('\n').filter((l) => l.trim() !== '');
      expect(lines).toEqual([`Error: streams config for stage filters (inline JSON): ${loaderMessage}`]);
      expect(existsSync(join(run.dir, 'cloudformation-template-update-stack.json'))).toBe(false);
    } finally {
      rmSync(run.dir, { recursive: true, force: true });
    }
  }, 240_000);

  it('packages valid patterns into the processor config as written', () => {
    let packaged: Packaged | undefined;
    try {
      packaged = slsPackage('filters', 'us-east-1', { streamsConfig: JSON.stringify(config(FILTERS)) });
      const env = (packaged.template.Resources.ProcessorLambdaFunction?.Properties.Environment as { Variables: Record<string, unknown> })
        .Variables;
      const streams = JSON.parse(String(env.STREAMS_CONFIG)) as { streams: Array<{ filters?: unknown }> };
      expect(streams.streams[0]!.filters).toEqual(FILTERS);
    } finally {
      if (packaged) rmSync(packaged.dir, { recursive: true, force: true });
    }
  }, 240_000);
});
