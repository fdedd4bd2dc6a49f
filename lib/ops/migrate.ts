/**
 * `kafka-direct migrate-ledger`: moves streams' ledgers written by an earlier release to the current
 * layout, in place (lib/ledger/migrate.dynamodb.ts says how). The stream must be stopped: its
 * planner not running, no processor holding a range. A ledger of the current layout is left alone.
 */
import type { StreamConfig } from '../config/schema';
import { ConfigurationError } from '../errors';
import type { MigrationReport } from '../ledger/migrate.dynamodb';
import type { OpsContext } from './context';

/** Migrates each stream's ledger, one after the other; the first refusal stops the rest. */
export async function migrateLedgers(ctx: OpsContext, streams: readonly StreamConfig[], nowMs: number): Promise<MigrationReport[]> {
  if (!ctx.ledgerMigration) throw new ConfigurationError('this ledger has no layout migration');
  const out: MigrationReport[] = [];
  for (const s of streams) out.push(await ctx.ledgerMigration.migrate(s.id, nowMs));
  return out;
}

/** One line per stream. */
export function renderMigration(r: MigrationReport): string {
  if (r.outcome === 'current') return `${r.stream}: already the current layout; nothing changed`;
  if (r.outcome === 'empty') return `${r.stream}: no ledger yet; nothing to migrate`;
  return (
    `${r.stream}: migrated ${r.partitions} partition(s) to the current layout; ${r.liveRanges} range(s) kept live, ` +
    `${r.archivedRanges} finished range(s) moved to the history`
  );
}
