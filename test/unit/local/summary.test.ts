/** `npm start`'s closing summary names what is not in the sink: dead letters and records left unapplied. */
import { humanSummary, type DemoSummary } from '../../../lib/local/demo';

const summary = (over: Partial<DemoSummary> = {}): DemoSummary => ({
  produced: 1495,
  applied: 1334,
  wallMs: 40_000,
  invocations: 90,
  stream: 'demo-x',
  topic: 'demo-payments-x',
  sinkTable: 'demo-totals-x',
  partitions: 4,
  kafkaRecords: 1495,
  plannerRuns: 40,
  deadLetters: 1,
  unapplied: 160,
  processorErrors: 0,
  caughtUp: false,
  interrupted: true,
  exact: false,
  consistent: true,
  ...over,
});

describe('npm start summary', () => {
  it('reports dead letters and unapplied records after Ctrl-C', () => {
    const text = humanSummary(summary(), false);
    expect(text).toMatch(/^1 dead-lettered, not in the sink \(see: npm run cli -- dead-letters demo-x\)$/m);
    expect(text).toMatch(/^160 records left unapplied \(not processed before the run stopped; the ledger keeps the position\)$/m);
  });

  it('says nothing of either when there are none', () => {
    const text = humanSummary(summary({ deadLetters: 0, unapplied: 0 }), false);
    expect(text).not.toMatch(/dead-lettered|unapplied/);
  });
});
