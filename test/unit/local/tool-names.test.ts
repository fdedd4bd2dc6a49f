import fc from 'fast-check';
import { parseToolResourceName, toolResourceName, TOOLS } from '../../../lib/local/tool-names';

const NOW = Date.UTC(2026, 11, 2, 12, 0, 0);
const t36 = (ms: number): string => ms.toString(36);

describe('tool resource names', () => {
  it('reads back the tool and creation time of every name it makes', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...TOOLS),
        fc.stringMatching(/^[a-z][a-z0-9]{0,11}(-[a-z0-9]{1,8}){0,2}$/),
        fc.integer({ min: Date.UTC(2020, 0, 1), max: NOW }),
        (tool, what, createdAtMs) => {
          expect(parseToolResourceName(toolResourceName(tool, what, createdAtMs), NOW)).toEqual({ tool, createdAtMs });
        },
      ),
    );
  });

  const created = NOW - 3 * 86_400_000;
  it.each([
    // Names the tools made before this module: the benchmarks, the demo, the chaos scenarios.
    [`bench-e2e-${t36(created)}`, 'bench'],
    [`bench-e2e-ledger-${t36(created)}`, 'bench'],
    [`bench-proc-${t36(created)}`, 'bench'],
    [`bench-latency-totals-${t36(created)}`, 'bench'],
    [`bench${t36(created)}-0042`, 'bench'],
    [`bench${t36(created)}-ledger`, 'bench'],
    [`demo-payments-${t36(created)}`, 'demo'],
    [`demo-totals-${t36(created)}`, 'demo'],
    [`c3-${t36(created)}-a1b2c3`, 'chaos'],
    [`c12-${t36(created)}-a1b2c3-t2`, 'chaos'],
    [`crc-${t36(created)}-a1b2c3-ordered`, 'chaos'],
    [`clb-${t36(created)}-a1b2c3`, 'chaos'],
    [`load-ledger-${t36(created)}-a1b2c3`, 'chaos'],
    [`chaos-ledger-${t36(created)}-a1b2c3`, 'chaos'],
  ])('recognises %s as left by %s', (name, tool) => {
    expect(parseToolResourceName(name, NOW)).toEqual({ tool, createdAtMs: created });
  });

  it.each([
    'clicks',
    'orders',
    'demo',
    'bench',
    // A user's names that look alike but carry no plausible creation time.
    'demo-orders-20240101',
    'load-test-abcdefgh',
    'bench-results',
    `payments-${t36(created)}`,
    `benchmark-${t36(created)}`,
    // A time more than a day in the future is no creation time.
    `bench-e2e-${t36(NOW + 2 * 86_400_000)}`,
    '__consumer_offsets',
  ])('leaves %s alone', (name) => {
    expect(parseToolResourceName(name, NOW)).toBeUndefined();
  });
});
