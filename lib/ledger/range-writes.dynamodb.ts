/**
 * The processor's writes on DynamoDB's layout 2: the range-write rules compiled onto the range's
 * map in its partition's group entry. A lease take, a progress commit, a batch record, a completion
 * (the range and its partition's committed offset are in the same entry), a failure and a release
 * are one conditional UpdateItem each, one write unit for a group item of up to 1 KB; a commit with
 * sink writes, dead letters or a data-loss entry is a transaction with them. An open segment range's
 * commit also moves its partition's committed offset, in the same entry: still one UpdateItem.
 */
import { CommitTooLargeError, fitsOneCommit } from '../ports/commit-limits';
import { holdsLease } from '../ports/ledger-rules/lease';
import {
  beginBatchStep,
  commitChunkSteps,
  completeRangeSteps,
  failRangeStep,
  progressCommitsOf,
  releaseRangeStep,
  type ProgressCommit,
} from '../ports/ledger-rules/range-write';
import type { ItemStep } from '../ports/ledger-rules/item-step';
import type { Ledger, LeaseOutcome, ProcessorWriteOutcome, RangeCompletionInput } from '../ports/ledger';
import type { LeasedRange } from '../ports/ledger-state';
import { SinkConditionError } from '../ports/sink-write';
import { isOpenRange } from '../ranges';
import { actionOf, type ItemWriteBuilder } from './expression.dynamodb';
import { groupKey } from './groups.dynamodb';
import type { Item } from './items.dynamodb';
import { DYNAMODB_LIMITS } from './limits.dynamodb';
import { leaseTakesWrite, rangeInImage, refusalInImage, refusedTake, takenOutcome, type LeaseTake } from './lease.dynamodb';
import { CONFLICT_RETRIES } from './retry.dynamodb';
import type { LedgerReads } from './reads.dynamodb';
import { sinkAction } from './sink.dynamodb';
import { compileSteps, holdsOnGroupImage, keyId, type StepContext } from './steps.dynamodb';
import type { TxAction } from './transactions.dynamodb';
import type { Writer } from './writer.dynamodb';

type RangeWrites = Pick<
  Ledger,
  | 'takeRangeLease'
  | 'takeRangeLeases'
  | 'commitChunk'
  | 'commitChunks'
  | 'beginBatch'
  | 'completeRange'
  | 'completeRanges'
  | 'failRange'
  | 'releaseRange'
>;

/**
 * Whether a progress commit whose condition failed on the group item `image` shows there as applied:
 * when the SDK sent it more than once, an attempt whose answer was lost may have landed. The item
 * then holds the range under this lease at `to` with no batch pending (and, for an open range, its
 * partition committed at `to`, moved by the same write).
 */
function commitLanded(image: Item | undefined, c: ProgressCommit): boolean {
  const { range: now, committed } = rangeInImage(c.range.stream, image, c.range);
  return (
    holdsLease(now, c.range.leaseToken) &&
    now.progress === c.to &&
    // A heartbeat leaves a pending batch where it is (see commitChunkSteps).
    (c.to === c.expectProgress || now.pendingUntil === undefined) &&
    (!isOpenRange(c.range) || committed === c.to)
  );
}

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
    landed?: (image: Item | undefined) => boolean,
  ): Promise<ProcessorWriteOutcome> => {
    const ctx = await contextOf(range.stream, range);
    if (!ctx) return 'lease-lost';
    const res = await writer.sendOne(what, groupWrite(ctx, steps));
    if (res.ok) return 'applied';
    // When the SDK sent the request more than once, an attempt whose answer was lost may have
    // applied it: the item the condition failed on then shows this write, no lost lease.
    return res.retried && landed?.(res.image) ? 'applied' : 'lease-lost';
  };

  /**
   * Lease takes of ranges of one group in one UpdateItem; when a condition fails, each take is judged
   * on the image: refused (its outcome), or takeable, in which case only another take failed the
   * write and it goes again with the others still takeable. Not a retry of the same call: a lost
   * race is a value (the refusal), and each round sends fewer takes, at once, bounded like the
   * conflict retries (CONFLICT_RETRIES); the write's own conflicts are retried inside sendOne.
   */
  const takeInGroup = async (stream: string, group: number, takes: LeaseTake[]): Promise<LeaseOutcome[]> => {
    const out = new Map<LeaseTake, LeaseOutcome>();
    let pending = takes;
    for (let attempt = 0; pending.length; attempt++) {
      const what = `take ${pending.length} lease(s) in group ${group} of ${stream}`;
      const res = await writer.sendOne(what, leaseTakesWrite(stream, group, pending), true);
      if (res.ok) {
        for (const t of pending) out.set(t, takenOutcome(stream, res.item, t));
        break;
      }
      const still: LeaseTake[] = [];
      for (const t of pending) {
        const refusal = refusalInImage(stream, res.image, t);
        if (refusal) out.set(t, refusal);
        else still.push(t);
      }
      // Nothing refused, yet the write failed (a taker won between the write and its image): held.
      if (still.length === pending.length || attempt >= CONFLICT_RETRIES) {
        for (const t of still) out.set(t, refusedTake(stream, res.image, t));
        break;
      }
      pending = still;
    }
    return takes.map((t) => out.get(t) ?? { kind: 'missing' });
  };

  const takeRangeLeases: Ledger['takeRangeLeases'] = async ({ stream, ranges, ...take }) => {
    const l = await reads.locate(stream, ranges);
    const byGroup = new Map<number, LeaseTake[]>();
    const takes = ranges.map((r) => ({ ...r, ...take }));
    for (const t of takes) {
      const g = l.groupOf(t.topic, t.partition);
      if (g !== undefined) byGroup.set(g, [...(byGroup.get(g) ?? []), t]);
    }
    const outcomes = new Map<LeaseTake, LeaseOutcome>();
    await Promise.all(
      [...byGroup].map(async ([g, ts]) => (await takeInGroup(stream, g, ts)).forEach((o, i) => outcomes.set(ts[i] as LeaseTake, o))),
    );
    return takes.map((t) => outcomes.get(t) ?? { kind: 'missing' });
  };

  return {
    takeRangeLeases,

    async takeRangeLease(input): Promise<LeaseOutcome> {
      const [outcome] = await takeRangeLeases({ ...input, ranges: [input] });
      return outcome as LeaseOutcome;
    },

    async commitChunk(input) {
      const { range, expectProgress, to, sinkWrites = [] } = input;
      if (!fitsOneCommit(sinkWrites, DYNAMODB_LIMITS)) throw new CommitTooLargeError(sinkWrites.length, DYNAMODB_LIMITS);
      const steps = commitChunkSteps(input);
      const what = `commit ${range.topic}/${range.partition} ${expectProgress}->${to}`;
      // Progress alone (at-least-once commits, chunks without writes; an open range's with its
      // partition's committed offset, in the same entry): one item is atomic on its own, and a
      // conditional UpdateItem costs one write unit where a transaction costs two.
      if (sinkWrites.length === 0 && steps.every((s) => s.kind === 'update')) {
        return holderWrite(what, range, steps, (image) => commitLanded(image, input));
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

    async completeRanges(inputs) {
      if (!inputs.length) return [];
      const stream = (inputs[0] as RangeCompletionInput).range.stream;
      const l = await reads.locate(
        stream,
        inputs.map((c) => c.range),
      );
      const ctx: StepContext = { stream, groupOf: (t, p) => l.groupOf(t, p) as number };
      const known = inputs.flatMap((c, index) => (l.groupOf(c.range.topic, c.range.partition) === undefined ? [] : [{ c, index }]));
      const units = (advance: (c: RangeCompletionInput) => boolean) =>
        known.map(({ c, index }) => ({ index, steps: completeRangeSteps(c, advance(c)) }));
      const first = await writer.applyUnits(
        ctx,
        writer.transport(),
        `complete ranges of ${stream}`,
        units((c) => c.advancePartition),
        1,
      );
      // A committed offset not at a range's start (split ranges finishing out of order): that range
      // finishes alone; the planner advances the committed offset over the finished prefix.
      const again = known.filter(({ c, index }) => c.advancePartition && first.get(index) !== 'applied');
      const second = again.length
        ? await writer.applyUnits(
            ctx,
            writer.transport(),
            `complete ranges of ${stream}`,
            units(() => false).filter((u) => again.some((a) => a.index === u.index)),
            1,
          )
        : new Map();
      return inputs.map((_, i) => ((second.get(i) ?? first.get(i)) === 'applied' ? 'applied' : 'lease-lost'));
    },

    async commitChunks(inputs) {
      const commits = progressCommitsOf(inputs);
      const stream = commits[0]?.range.stream;
      if (stream === undefined) return [];
      const l = await reads.locate(
        stream,
        commits.map((c) => c.range),
      );
      const ctx: StepContext = { stream, groupOf: (t, p) => l.groupOf(t, p) as number };
      const groupId = (c: ProgressCommit) => keyId(groupKey(stream, ctx.groupOf(c.range.topic, c.range.partition)));
      const units = commits.flatMap((c, index) =>
        l.groupOf(c.range.topic, c.range.partition) === undefined ? [] : [{ index, steps: commitChunkSteps(c) }],
      );
      // The images of failed conditions of requests the SDK sent more than once, by group item: an
      // earlier attempt may have applied them (a commit of the request that shows there landed).
      const retried = new Map<string, Array<Item | undefined>>();
      const transport = {
        ...writer.transport(),
        sendOne: async (what: string, b: ItemWriteBuilder) => {
          const res = await writer.sendOne(what, b);
          if (!res.ok && res.retried) retried.set(keyId(b.key), [...(retried.get(keyId(b.key)) ?? []), res.image]);
          return res;
        },
      };
      const out = await writer.applyUnits(ctx, transport, `commit ${units.length} chunk(s) of ${stream}`, units, 1);
      return commits.map((c, i): ProcessorWriteOutcome => {
        if (out.get(i) === 'applied') return 'applied';
        if (!out.has(i)) return 'lease-lost';
        return (retried.get(groupId(c)) ?? []).some((image) => commitLanded(image, c)) ? 'applied' : 'lease-lost';
      });
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
