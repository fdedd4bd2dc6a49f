/**
 * A function written for Lambda's Kafka trigger, packaged with `sls package` as any handler file:
 * bundled statically into the processor with a package of its own (from the project's
 * node_modules), its config inline; a module without the export the config names fails packaging,
 * naming the stream, the file and the export.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSlsPackage, slsPackage, type Packaged } from './package';
import { readZip } from './zip';

const MARKER = 'orders-trigger-fn-3c1d';
const PACKAGE_MARKER = 'order-label-pkg-9e2b';
const FUNCTION = `import type { MSKHandler } from 'aws-lambda';
import { label } from 'order-label';

export const handler: MSKHandler = async (event) => {
  for (const records of Object.values(event.records)) for (const r of records) console.log('${MARKER}', label(r.offset));
};
`;
const CLUSTER_ARN = 'arn:aws:kafka:us-east-1:123456789012:cluster/orders/11111111-2222-3333-4444-555555555555-1';

const dir = mkdtempSync(join(tmpdir(), 'trigger-fn-package-'));
const configFile = (name: string, exportName: string) => {
  const file = join(dir, name);
  writeFileSync(
    file,
    JSON.stringify({
      ledgerTable: 'ignored-on-aws',
      streams: [
        {
          id: 'orders',
          kafka: { brokers: ['kafka-1.example.com:9093'] },
          topics: ['orders'],
          processor: { timeoutMs: 300_000 },
          handler: {
            module: './functions/orders.ts',
            mode: 'at-least-once',
            triggerFunction: { export: exportName, eventSource: 'aws:kafka', eventSourceArn: CLUSTER_ARN },
          },
        },
      ],
    }),
  );
  return file;
};

let packaged: Packaged;
beforeAll(() => {
  mkdirSync(join(dir, 'functions'));
  writeFileSync(join(dir, 'functions', 'orders.ts'), FUNCTION);
  const pkg = join(dir, 'node_modules', 'order-label');
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'order-label', version: '1.0.0', main: 'index.js' }));
  writeFileSync(join(pkg, 'index.js'), `exports.label = (offset) => '${PACKAGE_MARKER}:' + offset;\n`);
  packaged = slsPackage('trig', 'us-east-1', { streamsConfig: configFile('streams.json', 'handler') });
}, 240_000);
afterAll(() => {
  if (packaged) rmSync(packaged.dir, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

describe('a trigger function', () => {
  it('is bundled into the processor with its own package, and its triggerFunction settings travel in the inline config', () => {
    const code = readZip(join(packaged.dir, 'processor.zip'))
      .find((e) => e.name === 'functions/processor.bundle.js')!
      .data()
      .toString('utf8');
    expect(code).toContain(MARKER);
    expect(code).toContain(PACKAGE_MARKER);
    const fn = packaged.template.Resources.ProcessorLambdaFunction!.Properties as { Environment: { Variables: Record<string, unknown> } };
    const inline = JSON.parse(String(fn.Environment.Variables.STREAMS_CONFIG)) as { streams: Array<{ handler: Record<string, unknown> }> };
    expect(inline.streams[0]!.handler).toMatchObject({
      module: './functions/orders.ts',
      triggerFunction: { export: 'handler', eventSource: 'aws:kafka', eventSourceArn: CLUSTER_ARN },
    });
  });

  it('without the export the config names, fails packaging naming the stream, the file and the export', () => {
    const run = runSlsPackage('trig', 'us-east-1', { streamsConfig: configFile('wrong-export.json', 'consume') });
    try {
      expect(run.status).toBe(1);
      expect(`${run.stdout}${run.stderr}`).toMatch(
        /Error: the streams config does not fit stage trig: stream orders: handler.module "\.\/functions\/orders\.ts" \(.*orders\.ts\): no function exported as "consume" \(handler.triggerFunction.export\); the module exports these functions: handler/,
      );
    } finally {
      rmSync(run.dir, { recursive: true, force: true });
    }
  });
});
