/**
 * `npm start`'s closing summary names what is not in the sink (dead letters and records left
 * unapplied) and what became of the run's topic and sink table.
 */
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
  cleanup: 'deleted',
  ...over,
});

describe('npm start summary', () => {
  it('reports dead letters and unapplied records after Ctrl-C', () => {
    const text = humanSummary(summary(), false);
    expect(text).toMatch(/^1 dead-lettered, not in the sink \(see: npm run cli -- dead-letters demo-x\)$/m);
    expect(text).toMatch(/^160 records left unapplied \(not processed before the run stopped; the ledger keeps the position\)$/m);
  });

  it('says the topic and sink table were deleted, or kept with --keep (with the CLI command to inspect them), or not deleted', () => {
    const deleted = humanSummary(summary(), false);
    expect(deleted).toMatch(/^deleted topic demo-payments-x and sink table demo-totals-x \(--keep keeps them\)$/m);
    expect(deleted).not.toMatch(/inspect:/);
    const kept = humanSummary(summary({ cleanup: 'kept' }), false);
    expect(kept).toMatch(/^kept topic demo-payments-x and sink table demo-totals-x \(--keep\)$/m);
    expect(kept).toMatch(/^inspect: npm run cli -- status demo-x /m);
    const failed = humanSummary(summary({ cleanup: 'failed', cleanupError: 'broker gone' }), false);
    expect(failed).toMatch(/^could not delete topic demo-payments-x and sink table demo-totals-x: broker gone$/m);
  });

  it('says nothing of either when there are none', () => {
    const text = humanSummary(summary({ deadLetters: 0, unapplied: 0 }), false);
    expect(text).not.toMatch(/dead-lettered|unapplied/);
  });
});
