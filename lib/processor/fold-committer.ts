/**
 * The commit path of a range whose handler folds (`foldHandler`): records are folded per sink item
 * into a batch as large as the budget allows, and each batch is written as few writes as the ledger
 * takes (docs/architecture.md, "Folded exactly-once batches"):
 *
 * 1. a batch whose writes fit one commit goes out with its progress in one transaction, as chunks do;
 * 2. a larger one is first recorded on the range (`beginBatch`: `pendingUntil`), then written in
 *    groups, each write guarded by the item's applied-offset mark for this partition (skipped where
 *    the mark shows the batch already reached the item), and only then is progress advanced to its end.
 *
 * Whoever takes the lease while a batch is pending re-folds exactly `[progress, pendingUntil)` and
 * writes it again: items that had it skip, the others get it. A rejected record ends the batch before
 * it and is isolated as in chunk mode (retried, then dead-lettered or stopping the partition).
 */
import { rangeLeaseMs } from '../config/continuous';
import { mapWithConcurrency } from '../concurrency';
import { DEFAULT_FOLD_MAX_ITEMS, DEFAULT_FOLD_MAX_RECORDS } from '../config/schema';
import { AppError } from '../errors';
import { fitsOneCommit } from '../ports/commit-limits';
import type { RangeState } from '../ports/ledger-state';
import type { SinkMark, SinkWrite } from '../ports/sink-write';
import type { KafkaRecord } from '../ports/range-reader';
import { isOpenRange } from '../ranges';
import { ChunkCommitter, LeaseLostError, PoisonStopError, toHandlerRecords, withTable, type CommitterInput } from './committer';
import { foldWriteProblem } from './fold-write';
import { sinkItemId, type HandlerRecord, type ItemFold, type SinkItemRef } from './handler-api';
import { foldReplayDataLossMessage, nondeterministicFoldMessage } from './messages';
import type { GateVerdict } from './record-gate';

/** How large a batch grows and how it is written. */
export type FoldBudget = {
  /** Distinct sink items held before the batch is written (the memory bound). */
  maxItems: number;
  /** Records folded before the batch is written (bounds what a crash makes the next invocation redo). */
  maxRecords: number;
  /** Batches with at most this many writes commit atomically with their progress (0: always marked). */
  atomicMaxWrites: number;
  /** Writes per marked group (at most the ledger's `maxMarkedWrites`). */
  writeGroupSize: number;
  /** Marked groups in flight at once. */
  writeConcurrency: number;
  /**
   * Continuous segments: a batch is written while the next chunks are folded (one write in flight,
   * each batch ending where the fold stood, at a chunk's end, when its write began), so a partition's
   * reading never waits for the transaction of the batch before.
   */
  writeBehind?: boolean;
};

export const DEFAULT_FOLD_BUDGET: FoldBudget = {
  maxItems: DEFAULT_FOLD_MAX_ITEMS,
  maxRecords: DEFAULT_FOLD_MAX_RECORDS,
  atomicMaxWrites: Number.POSITIVE_INFINITY, // capped by the ledger's limits
  writeGroupSize: Number.POSITIVE_INFINITY, // capped by the ledger's limits
  // Each group's writes go out a few at a time too (the DynamoDB ledger's MARKED_WRITE_CONCURRENCY).
  writeConcurrency: 2,
};

/** The items of the batch being folded, and the offsets it covers. */
type Batch = { items: Map<string, SinkItemRef & { value: unknown }>; records: number };

export class FoldCommitter extends ChunkCommitter {
  private batch: Batch = { items: new Map(), records: 0 };
  /** The end of the batch so far: offsets below it are folded (or committed). */
  private foldedTo: number;
  /** A batch someone began and did not finish: it must be finished, exactly, first. */
  private replayUntil: number | undefined;
  /** Observed time of one marked write group, for the deadline check. */
  private groupMs = 100;
  /** Write-behind (`budget.writeBehind`): the batch write in flight, what failed one, and whether a chunk is being folded. */
  private writing: Promise<void> | undefined;
  private writeError: unknown;
  private folding = false;

  constructor(
    c: CommitterInput,
    private readonly fold: ItemFold<unknown>,
    private budget: FoldBudget,
    private readonly leased: Pick<RangeState, 'pendingUntil' | 'rewinds' | 'attempts'>,
  ) {
    // A holder before this one may have written a batch ending the range without recording it (see
    // `writeBatch`): its items carry marks past every batch of ours, so ours are marked too, never
    // atomic writes without marks, which would apply again what such an item already has. There was
    // one if an attempt was used, or if progress was committed: an attempt that committed progress
    // gives its attempt back (Ledger.failRange, releaseRange), so attempts alone do not tell. An open
    // range (a continuous segment's) has no batch ending it, and its successors keep atomic writes.
    super(c);
    const heldBefore = leased.attempts > 1 || c.progress > c.range.from;
    if (c.deferFinal && !isOpenRange(c.range) && heldBefore) this.budget = { ...budget, atomicMaxWrites: 0 };
    this.foldedTo = c.progress;
    const pending = leased.pendingUntil;
    this.replayUntil = pending !== undefined && pending > c.progress ? pending : undefined;
  }

  override get position(): number {
    return this.foldedTo;
  }

  override pendingWriteMs(): number {
    const groups = Math.ceil(this.batch.items.size / this.groupSize());
    return Math.ceil(groups / this.budget.writeConcurrency) * this.groupMs;
  }

  /** Folds one fetched chunk into the batch, writing the batch whenever it must end. */
  override async handleChunk(records: KafkaRecord[], nextOffset: number): Promise<void> {
    if (this.writeError !== undefined) throw this.writeError;
    this.folding = true;
    try {
      await this.foldChunk(records, nextOffset);
    } finally {
      this.folding = false;
    }
    // At a chunk's end the batch is whole: written behind the reading unless it must be written now.
    if (this.budget.writeBehind && this.replayUntil === undefined) this.writeBehindNow();
  }

  private async foldChunk(records: KafkaRecord[], nextOffset: number): Promise<void> {
    this.countRead(records);
    const to = Math.min(nextOffset, this.c.range.until);
    if (records.length > 0) await this.c.afterStep?.('handled', { from: this.foldedTo, to });
    const batch = toHandlerRecords(records, this.c.range.incarnation);
    const verdicts = await this.judge(batch);
    for (let i = 0; i < batch.length; i++) {
      const rec = batch[i] as HandlerRecord;
      if (this.replayUntil !== undefined && rec.offset >= this.replayUntil) await this.writeBatch(this.replayUntil);
      const recTo = i + 1 < batch.length ? (batch[i + 1] as HandlerRecord).offset : to;
      const verdict = verdicts?.[i] ?? { kind: 'pass', record: rec };
      if (verdict.kind === 'pass') await this.foldRecord(verdict.record, recTo);
      else if (verdict.kind === 'skip') this.skipped[verdict.reason] += 1;
      else await this.rejectInBatch(rec, recTo, verdict);
    }
    this.foldedTo = Math.max(this.foldedTo, to);
    this.chunks += 1;
    if (this.replayUntil !== undefined) {
      if (this.foldedTo >= this.replayUntil) await this.writeBatch(this.replayUntil);
    } else if (this.budget.writeBehind && this.batch.items.size < this.budget.maxItems) {
      // Written at the chunk's end (`handleChunk`), behind the reading.
    } else if (this.batch.items.size >= this.budget.maxItems || this.batch.records >= this.budget.maxRecords) {
      await this.writeBatch(this.foldedTo);
    }
  }

  /** Starts writing the batch folded so far unless a write is in flight (its end starts the next). */
  private writeBehindNow(): void {
    // Nothing folded past what is committed, or left to the completion (`deferFinal`): nothing to write.
    if (this.writing || this.writeError !== undefined || this.foldedTo <= Math.max(this.progress, this.handledTo ?? 0)) return;
    this.writing = this.writeBatchNow(this.foldedTo)
      .catch((err: unknown) => void (this.writeError = err))
      .finally(() => {
        this.writing = undefined;
        // Chunks folded meanwhile: written now, unless one is being folded (its end starts the write).
        if (!this.folding && this.replayUntil === undefined) this.writeBehindNow();
      });
  }

  /** Waits for the batch write in flight (write-behind) and rethrows what failed it. */
  private async writesSettled(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.writeError !== undefined) throw this.writeError;
  }

  /** Writes what is folded (the read stopped: range end or deadline); a replay not read to its end waits. */
  override async flush(): Promise<void> {
    if (this.replayUntil !== undefined && this.foldedTo < this.replayUntil) return;
    await this.writeBatch(this.replayUntil ?? this.foldedTo);
  }

  override async skipLost(until: number): Promise<void> {
    if (this.replayUntil !== undefined) {
      throw new PoisonStopError(foldReplayDataLossMessage(until, this.progress, this.replayUntil));
    }
    await this.writeBatch(this.foldedTo);
    await super.skipLost(until);
    this.foldedTo = this.progress;
  }

  /** Adds one record to its item; a rejected record ends the batch before it and is isolated. */
  private async foldRecord(rec: HandlerRecord, recTo: number): Promise<void> {
    let part: ReturnType<ItemFold<unknown>['map']>;
    try {
      part = this.fold.map(rec, this.c.ctx);
    } catch (err) {
      if (this.replayUntil !== undefined) {
        throw new NondeterministicFoldError(rec.idempotencyKey, this.progress, this.replayUntil, err);
      }
      await this.writeBatch(rec.offset);
      await this.isolate([rec], recTo, err);
      this.foldedTo = this.progress;
      return;
    }
    const item = part && { key: part.key, table: part.table ?? this.c.stream.handler?.sinkTable };
    // Write-behind batches stay one transaction each: a batch grown past it while the one before was
    // written would take the marked path (several round trips), and the next would grow more.
    if (item && this.budget.writeBehind && this.replayUntil === undefined && this.batchFull(sinkItemId(item))) {
      await this.writeBatch(rec.offset);
    }
    this.batch.records += 1;
    if (!part || !item) return;
    const id = sinkItemId(item);
    const seen = this.batch.items.get(id);
    this.batch.items.set(id, { ...item, value: seen ? this.fold.combine(seen.value, part.value) : part.value });
  }

  /** Whether a new item `id` would take the batch past what one commit's transaction carries. */
  private batchFull(id: string): boolean {
    const limit = Math.min(this.budget.atomicMaxWrites, this.c.ledger.limits.maxSinkWrites);
    return !this.batch.items.has(id) && this.batch.items.size >= limit;
  }

  /** A stage rejected the record: the batch ends before it and the record is dead-lettered (never inside a replay). */
  private async rejectInBatch(rec: HandlerRecord, recTo: number, verdict: GateVerdict & { kind: 'reject' }): Promise<void> {
    if (this.replayUntil !== undefined) {
      throw new NondeterministicFoldError(rec.idempotencyKey, this.progress, this.replayUntil, new Error(verdict.error));
    }
    await this.writeBatch(rec.offset);
    await this.rejectJudged(rec, recTo, verdict);
    this.foldedTo = this.progress;
  }

  /**
   * Writes the batch `[progress, end)` and advances progress to `end` (see the file's comment). A
   * batch that ends the range, when the completion carries the last commit (`deferFinal`), is
   * written as marked writes without being recorded first and its progress is left to the completion:
   * no later batch of the range can end past it, so a holder after a crash re-folds from `progress`
   * batches that end at or before it, which every item it reached already skips (that holder marks
   * all its batches: see the constructor).
   */
  private async writeBatch(end: number): Promise<void> {
    await this.writesSettled();
    return this.writeBatchNow(end);
  }

  private async writeBatchNow(end: number): Promise<void> {
    if (end <= this.progress) return;
    // Taken whole: the next chunks fold into a new batch while this one is written.
    const batch = this.batch;
    this.batch = { items: new Map(), records: 0 };
    const writes = this.itemWrites(batch);
    const replay = this.replayUntil !== undefined;
    const limits = this.c.ledger.limits;
    if (this.c.deferFinal && !replay && end === this.c.range.until) {
      await this.writeMarked(end, writes);
      this.handledTo = end;
    } else if (!replay && writes.length <= Math.min(this.budget.atomicMaxWrites, limits.maxSinkWrites) && fitsOneCommit(writes, limits)) {
      await this.commit(end, writes, []);
    } else {
      if (!replay) await this.begin(end);
      await this.writeMarked(end, writes);
      await this.commit(end, [], []);
    }
    this.records += batch.records;
    this.foldedTo = Math.max(this.foldedTo, end);
    this.replayUntil = undefined;
  }

  /** The batch's one write per item, checked to be an update of that item. */
  private itemWrites(batch: Batch): SinkWrite[] {
    const sinkTable = this.c.stream.handler?.sinkTable;
    return [...batch.items.values()].map((it) => {
      const written: unknown = this.fold.write({ key: it.key, table: it.table }, it.value);
      const problem = foldWriteProblem(it, written, sinkTable);
      if (problem !== undefined) throw new FoldWriteError(problem);
      return withTable(written as SinkWrite, sinkTable);
    });
  }

  private async begin(end: number): Promise<void> {
    const { ledger, range, stream, held } = this.c;
    const outcome = await ledger.beginBatch({
      range: held,
      expectProgress: this.progress,
      until: end,
      nowMs: await this.c.storeClock(),
      leaseMs: rangeLeaseMs(stream),
    });
    if (outcome === 'lease-lost') throw new LeaseLostError();
    this.replayUntil = end;
    await this.c.afterStep?.('batch-begun', { from: this.progress, to: Math.min(end, range.until) });
  }

  /** Sends the writes in marked groups, a few at a time; a kill point follows each group. */
  private async writeMarked(end: number, writes: SinkWrite[]): Promise<void> {
    const { range, stream } = this.c;
    const mark: SinkMark = {
      stream: stream.id,
      topic: range.topic,
      partition: range.partition,
      ...(range.incarnation ? { incarnation: range.incarnation } : {}),
      ...(this.leased.rewinds ? { rewinds: this.leased.rewinds } : {}),
      until: end,
    };
    const size = this.groupSize();
    const groups = Array.from({ length: Math.ceil(writes.length / size) }, (_, i) => writes.slice(i * size, (i + 1) * size));
    await mapWithConcurrency(groups, this.budget.writeConcurrency, async (group) => {
      const t0 = this.c.clock();
      await this.c.ledger.applyMarkedSinkWrites({ mark, writes: group });
      this.groupMs = 0.8 * this.groupMs + 0.2 * (this.c.clock() - t0);
      await this.c.afterStep?.('sink-written', { from: this.progress, to: end });
    });
  }

  private groupSize(): number {
    return Math.max(1, Math.min(this.budget.writeGroupSize, this.c.ledger.limits.maxMarkedWrites));
  }
}

/** A record folded into a pending batch is rejected when the batch is folded again. */
export class NondeterministicFoldError extends AppError {
  constructor(key: string, from: number, until: number, cause: unknown) {
    super('FOLD_NOT_DETERMINISTIC', nondeterministicFoldMessage(key, from, until), { cause });
  }
}

/** `fold.write` returned something other than an unconditional update of the item it was given. */
export class FoldWriteError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('FOLD_WRITE', message, options);
  }
}
