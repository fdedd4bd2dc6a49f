/**
 * The planner's writes and the operator's rewind on DynamoDB's layout 2. A run's writes are the
 * plan-write rules' steps sent through packed requests: the writes of one group item (ranges planned,
 * dispatches marked, ranges parked, finished ranges archived) share one UpdateItem fenced by the
 * item's own `ep`, and writes of several items (registrations, retirements, data loss, closed
 * incarnations) go in transactions with the META fence check. A run that writes more than
 * PACK_GROUPS_ABOVE group items packs them into transactions too: fewer requests, at twice the units.
 * The ranges a run archives are put into the history first.
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { plannerFence } from '../ports/ledger-rules/fence';
import { meets, rangeRef, type ItemStep } from '../ports/ledger-rules/item-step';
import { planWriteSteps } from '../ports/ledger-rules/plan-write';
import { rewindDeadLetters, rewindPartitionStep, rewindRanges } from '../ports/ledger-rules/rewind';
import type { Ledger, RewindOutcome, WriteOutcome } from '../ports/ledger';
import type { RangeState } from '../ports/ledger-state';
import { codec } from './items.dynamodb';
import { historyItems } from './history.dynamodb';
import { unitsOfItemWrite, type KeyPacer } from './key-pacing.dynamodb';
import { keys, spanQuery } from './keys.dynamodb';
import type { StreamLocations } from './locations.dynamodb';
import type { LedgerReads } from './reads.dynamodb';
import type { Unit, UnitOutcome } from './requests.dynamodb';
import { keyId, partitionsOf, type StepContext } from './steps.dynamodb';
import { fenceCheck, fencedChangeAction, type TxAction } from './transactions.dynamodb';
import { groupKey } from './groups.dynamodb';
import type { Writer } from './writer.dynamodb';
import type { TranslatingSend } from './errors.dynamodb';

type Send = TranslatingSend<{ doc: DynamoDBDocumentClient }>;

/** Group items a run writes one UpdateItem each, at most; more are packed into transactions. */
export const PACK_GROUPS_ABOVE = 32;
/** Items one transaction takes besides its first action. */
const TX_ITEMS = 99;

export function createPlanWrites(
  table: string,
  send: Send,
  reads: LedgerReads,
  writer: Writer,
  pacer: KeyPacer,
): Pick<Ledger, 'applyPlan' | 'rewindPartitions'> {
  /** Where every partition the units touch is; registrations get a group (all partitions read first). */
  const locateUnits = async (stream: string, units: Unit[]): Promise<StreamLocations> => {
    const registering = units.flatMap((u) => u.steps.flatMap((s) => (s.kind === 'create-partition' ? [s.value] : [])));
    if (!registering.length)
      return reads.locate(
        stream,
        units.flatMap((u) => u.steps.flatMap(partitionsOf)),
      );
    const l = await reads.locateAll(stream);
    l.assign(registering);
    return l;
  };

  /** Puts the history of the ranges `units` archive (before the writes that remove them from their entries). */
  const archive = async (stream: string, units: Unit[], epoch: number): Promise<void> => {
    const ranges = units.flatMap((u) => u.steps.flatMap((s) => (s.kind === 'archive-range' ? [s.value as RangeState] : [])));
    for (const item of historyItems(stream, ranges, Date.now(), epoch)) {
      await pacer.reserve(new Map([unitsOfItemWrite(item, item, false)]));
      await send(`record range history of ${stream}`, ({ doc }) => doc.send(new PutCommand({ TableName: table, Item: item })));
    }
  };

  /** The units' outcomes through packed requests; units on partitions the ledger does not have fail their condition. */
  const apply = async (
    stream: string,
    units: Unit[],
    fence: { epoch: number; head: TxAction; what: string; packAll?: boolean },
  ): Promise<Map<number, UnitOutcome>> => {
    const l = await locateUnits(stream, units);
    const out = new Map<number, UnitOutcome>();
    const known = units.filter((u) => {
      const ok = u.steps.flatMap(partitionsOf).every((p) => l.groupOf(p.topic, p.partition) !== undefined);
      if (!ok) out.set(u.index, 'condition-failed');
      return ok;
    });
    await archive(stream, known, fence.epoch);
    const ctx: StepContext = { stream, groupOf: (t, p) => l.groupOf(t, p) as number, fenceEpoch: fence.epoch };
    const groups = new Set(
      known.flatMap((u) => u.steps.flatMap(partitionsOf).map((p) => keyId(groupKey(stream, ctx.groupOf(p.topic, p.partition))))),
    );
    const limit = fence.packAll || groups.size > PACK_GROUPS_ABOVE ? TX_ITEMS : 1;
    const t = writer.transport({ fenceCheck: fence.head, fenceEpoch: fence.epoch });
    for (const [i, o] of await writer.applyUnits(ctx, t, fence.what, known, limit)) out.set(i, o);
    return out;
  };

  return {
    async applyPlan({ stream, epoch, ownerToken, writes }): Promise<WriteOutcome[]> {
      const units = writes.map((w, index) => ({ index, steps: planWriteSteps(w) }));
      const out = await apply(stream, units, { epoch, head: fenceCheck(table, stream, epoch, ownerToken), what: `plan ${stream}` });
      // The port's order: once a write is fenced, so is every write after it.
      const firstFenced = writes.findIndex((_, i) => out.get(i) === 'fenced');
      return writes.map((_, i) => (firstFenced >= 0 && i >= firstFenced ? 'fenced' : (out.get(i) ?? 'fenced')));
    },

    async rewindPartitions({ stream, epoch, ownerToken, partitions, change }): Promise<RewindOutcome> {
      // Fenced out already: say so before anything else (the transactions check it again).
      const meta = await send(`read meta of ${stream}`, ({ doc }) =>
        doc.send(new GetCommand({ TableName: table, Key: keys.meta(stream), ConsistentRead: true })),
      );
      if (!meets(meta.Item, plannerFence(epoch, ownerToken))) return { outcome: 'fenced' };
      // What each partition holds now: the rewind rules say what blocks and what goes.
      const state = await reads.readSome(stream, partitions);
      const units: Unit[] = [];
      let abandoned = 0;
      let removedRanges = 0;
      for (const [index, p] of partitions.entries()) {
        const ranges = state.filter((s) => s.partition.topic === p.topic && s.partition.partition === p.partition).flatMap((s) => s.ranges);
        const plan = rewindRanges(p, ranges);
        if (plan.blocked) return { outcome: 'condition-failed', reason: plan.reason };
        abandoned += plan.abandonParked.length;
        removedRanges += plan.removeDone.length + plan.endSegments.length;
        const steps: ItemStep[] = [
          rewindPartitionStep(p),
          // Their offsets are planned and processed again: the ranges there leave no trace.
          ...[...plan.abandonParked, ...plan.removeDone, ...plan.endSegments].map((r): ItemStep => ({ kind: 'delete', ref: rangeRef(r) })),
        ];
        units.push({ index, steps });
      }
      const head = fencedChangeAction(table, stream, epoch, ownerToken, change);
      const out = await apply(stream, units, { epoch, head, what: `rewind ${stream}`, packAll: true });
      if ([...out.values()].includes('fenced')) return { outcome: 'fenced' };
      if ([...out.values()].includes('condition-failed')) {
        return { outcome: 'condition-failed', reason: 'a partition or its ranges changed since they were read' };
      }
      const removedDeadLetters = await removeDeadLetters(stream, epoch, ownerToken, partitions);
      if (removedDeadLetters === 'fenced') return { outcome: 'fenced' };
      return { outcome: 'applied', removedRanges, abandonedParkedRanges: abandoned, removedDeadLetters };
    },
  };

  /**
   * The dead letters at or after each rewound cursor, removed in fenced transactions; an interrupted
   * rewind is completed by running it again.
   */
  async function removeDeadLetters(
    stream: string,
    epoch: number,
    ownerToken: string,
    partitions: Parameters<Ledger['rewindPartitions']>[0]['partitions'],
  ) {
    const deletes: TxAction[] = [];
    for (const p of partitions) {
      const stored = await reads.queryAll(
        `read dead letters of ${stream}`,
        spanQuery(table, stream, keys.partitionSpan('D', p.topic, p.partition, p.to, p.incarnation)),
      );
      for (const d of rewindDeadLetters(p, stored.map(codec.deadLetterFromItem)))
        deletes.push({ Delete: { TableName: table, Key: keys.deadLetter(stream, d) } });
    }
    for (let i = 0; i < deletes.length; i += TX_ITEMS) {
      const res = await writer.sendTransaction(`rewind ${stream} (dead letters)`, [
        fenceCheck(table, stream, epoch, ownerToken),
        ...deletes.slice(i, i + TX_ITEMS),
      ]);
      if (!res.ok && res.reasons[0]?.Code === 'ConditionalCheckFailed') return 'fenced' as const;
    }
    return deletes.length;
  }
}
