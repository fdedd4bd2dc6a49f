/**
 * The processor's writes on DynamoDB's layout 2: the range-write rules compiled onto the range's
 * map in its partition's group entry. A lease take, a progress commit, a batch record, a completion
 * (the range and its partition's committed offset are in the same entry), a failure and a release
 * are one conditional UpdateItem each, one write unit for a group item of up to 1 KB; a commit with
 * sink writes, dead letters or a data-loss entry is a transaction with them.
 */
import { CommitTooLargeError, fitsOneCommit } from '../ports/commit-limits';
import { holdsLease } from '../ports/ledger-rules/lease';
import { beginBatchStep, commitChunkSteps, completeRangeSteps, failRangeStep, releaseRangeStep } from '../ports/ledger-rules/range-write';
import type { ItemStep } from '../ports/ledger-rules/item-step';
import type { Ledger, LeaseOutcome, ProcessorWriteOutcome } from '../ports/ledger';
import type { LeasedRange, RangeState } from '../ports/ledger-state';
import { SinkConditionError } from '../ports/sink-write';
import { actionOf, type ItemWriteBuilder } from './expression.dynamodb';
import { DYNAMODB_LIMITS } from './limits.dynamodb';
import { leaseTakesWrite, rangeInImage, refusedTake, takenOutcome } from './lease.dynamodb';
import type { LedgerReads } from './reads.dynamodb';
import { sinkAction } from './sink.dynamodb';
import { compileSteps, holdsOnGroupImage, type StepContext } from './steps.dynamodb';
import type { TxAction } from './transactions.dynamodb';
import type { Writer } from './writer.dynamodb';

type RangeWrites = Pick<Ledger, 'takeRangeLease' | 'commitChunk' | 'beginBatch' | 'completeRange' | 'failRange' | 'releaseRange'>;

export function createRangeWrites(table: string, reads: LedgerReads, writer: Writer): RangeWrites {
  /** The compile context of a range's stream, once its group is known (undefined: the ledger has no such partition). */
  const contextOf = async (stream: string, r: { topic: string; partition: number; shard?: string }): Promise<StepContext | undefined> => {
    const l = await reads.locate(stream, [r]);
    if (l.groupOf(r.topic, r.partition) === undefined) return undefined;
    return { stream, groupOf: (t, p) => l.groupOf(t, p) as number };
  };

  /** The single group write of `steps` (all on one group item). */
  const groupWrite = (ctx: StepContext, steps: readonly ItemStep[]): ItemWriteBuilder => {
    const writes = compileSteps(ctx, steps);
    if (writes.size !== 1) throw new Error(`ledger layout: expected one item, the steps write ${writes.size}`);
    return [...writes.values()][0] as ItemWriteBuilder;
  };

  /** A lease holder's write of one group item: applied, or the lease (or the position) is gone. */
  const holderWrite = async (
    what: string,
    range: LeasedRange,
    steps: readonly ItemStep[],
    landed?: (now: RangeState) => boolean,
  ): Promise<ProcessorWriteOutcome> => {
    const ctx = await contextOf(range.stream, range);
    if (!ctx) return 'lease-lost';
    const res = await writer.sendOne(what, groupWrite(ctx, steps));
    if (res.ok) return 'applied';
    // When the SDK sent the request more than once, an attempt whose answer was lost may have
    // applied it: the item the condition failed on then shows this write, no lost lease.
    const now = rangeInImage(range.stream, res.image, range).range;
    return res.retried && now && landed?.(now) ? 'applied' : 'lease-lost';
  };

  return {
    async takeRangeLease(input): Promise<LeaseOutcome> {
      const ctx = await contextOf(input.stream, input);
      if (!ctx) return { kind: 'missing' };
      const b = leaseTakesWrite(input.stream, ctx.groupOf(input.topic, input.partition), [input]);
      const res = await writer.sendOne(`take lease of ${input.topic}/${input.partition}/${input.from}`, b, true);
      return res.ok ? takenOutcome(input.stream, res.item, input) : refusedTake(input.stream, res.image, input);
    },

    async commitChunk(input) {
      const { range, expectProgress, to, sinkWrites = [] } = input;
      if (!fitsOneCommit(sinkWrites, DYNAMODB_LIMITS)) throw new CommitTooLargeError(sinkWrites.length, DYNAMODB_LIMITS);
      const steps = commitChunkSteps(input);
      const what = `commit ${range.topic}/${range.partition} ${expectProgress}->${to}`;
      // Progress alone (at-least-once commits, chunks without writes): one item is atomic on its own,
      // and a conditional UpdateItem costs one write unit where a transaction costs two.
      if (steps.length === 1 && sinkWrites.length === 0) {
        const landed = (now: RangeState) => holdsLease(now, range.leaseToken) && now.progress === to && now.pendingUntil === undefined;
        return holderWrite(what, range, steps, landed);
      }
      const ctx = await contextOf(range.stream, range);
      if (!ctx) return 'lease-lost';
      // The group item first: its failed condition is a lost lease; a later action's is the sink's.
      const writes = [...compileSteps(ctx, steps).values()];
      const actions: TxAction[] = [...writes.map((b) => actionOf(table, b) as TxAction), ...sinkWrites.map(sinkAction)];
      const res = await writer.sendTransaction(what, actions);
      if (res.ok) return 'applied';
      const codes = res.reasons.map((r) => r.Code ?? 'None');
      if (codes[0] === 'ConditionalCheckFailed') return 'lease-lost';
      const failed = codes.map((c, i) => (c === 'ConditionalCheckFailed' ? i : -1)).filter((i) => i > 0);
      throw new SinkConditionError(
        `a sink write's condition failed (actions ${failed.join(', ')} of ` +
          `the chunk ${expectProgress}->${to}); nothing of the chunk was applied`,
      );
    },

    async beginBatch(input) {
      const { range, expectProgress, until } = input;
      return holderWrite(`begin batch ${range.topic}/${range.partition} ${expectProgress}->${until}`, range, [beginBatchStep(input)]);
    },

    async completeRange(input) {
      const { range, advancePartition } = input;
      const what = `complete ${range.topic}/${range.partition}/${range.from}`;
      const ctx = await contextOf(range.stream, range);
      if (!ctx) return 'lease-lost';
      const withAdvance = completeRangeSteps(input, advancePartition);
      const res = await writer.sendOne(what, groupWrite(ctx, withAdvance));
      if (res.ok) return 'applied';
      // The committed offset is not at this range's start (split ranges finishing out of order):
      // finish the range alone; the planner advances the committed offset over the finished prefix.
      const [rangeStep] = withAdvance as [ItemStep];
      if (!advancePartition || !holdsOnGroupImage(res.image, rangeStep, range.stream)) return 'lease-lost';
      return (await writer.sendOne(what, groupWrite(ctx, completeRangeSteps(input, false)))).ok ? 'applied' : 'lease-lost';
    },

    async failRange(input) {
      const { range } = input;
      return holderWrite(`fail ${range.topic}/${range.partition}/${range.from}`, range, [failRangeStep(input)]);
    },

    async releaseRange(input) {
      const { range } = input;
      return holderWrite(`release ${range.topic}/${range.partition}/${range.from}`, range, [releaseRangeStep(input)]);
    },
  };
}
