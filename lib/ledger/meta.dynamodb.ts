/**
 * The DynamoDB ledger's META item methods: the stream's planner lease (taken only on a ledger of the
 * current layout), the planner loop, the start and finish marks and operator change records.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { plannerFence } from '../ports/ledger-rules/fence';
import { meets } from '../ports/ledger-rules/item-step';
import type { Ledger, PlannerLease, WriteOutcome } from '../ports/ledger';
import { maySucceed, type LoopRenewal, type LoopTake, type PlannerLoopState } from '../ports/planner-loop';
import { LEDGER_LAYOUT } from './groups.dynamodb';
import { codec } from './items.dynamodb';
import { keys } from './keys.dynamodb';
import { LedgerLayoutError } from './locations.dynamodb';
import {
  claimChainTickUpdate,
  recordSuccessorUpdate,
  releasePlannerLoopUpdate,
  renewPlannerLoopUpdate,
  splitLoop,
  takePlannerLoopUpdate,
} from './loop.dynamodb';
import { acquirePlannerLeaseUpdate, markMetaOnceUpdate, releasePlannerLeaseUpdate, requestPlannerLeaseUpdate } from './updates.dynamodb';
import { fencedChangeAction } from './transactions.dynamodb';
import type { Writer } from './writer.dynamodb';
import type { TranslatingSend } from './errors.dynamodb';

type Send = TranslatingSend<{ doc: DynamoDBDocumentClient }>;

type MetaMethods = Pick<
  Ledger,
  | 'readMeta'
  | 'acquirePlannerLease'
  | 'requestPlannerLease'
  | 'releasePlannerLease'
  | 'markStreamStarted'
  | 'markStreamFinished'
  | 'recordChange'
  | 'takePlannerLoop'
  | 'renewPlannerLoop'
  | 'releasePlannerLoop'
  | 'claimChainTick'
>;

export function createMetaMethods(table: string, send: Send, writer: Writer): MetaMethods {
  /** Sets a one-time timestamp on the stream's META item, fenced by the planner epoch. */
  const markMetaOnce = async (
    input: Parameters<Ledger['markStreamStarted']>[0],
    attribute: 'startedAtMs' | 'finishedAtMs',
  ): Promise<WriteOutcome> => {
    const { stream, epoch, ownerToken } = input;
    try {
      await send(`set ${attribute} of ${stream}`, ({ doc }) => doc.send(new UpdateCommand(markMetaOnceUpdate(table, input, attribute))));
      return 'applied';
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      // The META item the condition failed on: still ours means the mark was set already.
      const mine = err.Item !== undefined && meets(unmarshall(err.Item), plannerFence(epoch, ownerToken));
      return mine ? 'condition-failed' : 'fenced';
    }
  };

  /** Records `ownerToken` as the successor of `holder`'s loop; the loop as it is after (or as found, when the holder changed). */
  const recordSuccessor = async (stream: string, holder: string, ownerToken: string): Promise<PlannerLoopState> => {
    try {
      const res = await send(`wait for planner loop of ${stream}`, ({ doc }) =>
        doc.send(new UpdateCommand(recordSuccessorUpdate(table, { stream, holder, ownerToken }))),
      );
      return splitLoop(res.Attributes ?? {}).loop ?? {};
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      return splitLoop(err.Item ? unmarshall(err.Item) : {}).loop ?? {};
    }
  };

  /** A conditional META update whose failed condition is a value. */
  const metaUpdate = async (what: string, input: ConstructorParameters<typeof UpdateCommand>[0]): Promise<boolean> => {
    try {
      await send(what, ({ doc }) => doc.send(new UpdateCommand(input)));
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  };

  return {
    async readMeta(stream) {
      const res = await send(`read meta of ${stream}`, ({ doc }) =>
        doc.send(new GetCommand({ TableName: table, Key: keys.meta(stream), ConsistentRead: true })),
      );
      return res.Item ? codec.metaFromItem(res.Item) : undefined;
    },

    async acquirePlannerLease(input): Promise<PlannerLease> {
      try {
        const res = await send(`acquire planner lease of ${input.stream}`, ({ doc }) =>
          doc.send(new UpdateCommand(acquirePlannerLeaseUpdate(table, input, LEDGER_LAYOUT))),
        );
        const meta = codec.metaFromItem(res.Attributes ?? {});
        return { acquired: true, epoch: meta.epoch, meta };
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        const old = err.Item ? unmarshall(err.Item) : {};
        // A stream that has planned before, on a ledger written by an earlier release.
        if (old.layout !== LEDGER_LAYOUT && typeof old.epoch === 'number' && old.epoch > 0) throw new LedgerLayoutError(input.stream);
        return {
          acquired: false,
          holder: (old.ownerToken as string | undefined) ?? 'unknown',
          leaseExpiresAtMs: Number(old.leaseExpiresAtMs ?? 0),
        };
      }
    },

    async requestPlannerLease(input) {
      await metaUpdate(`ask for the planner lease of ${input.stream}`, requestPlannerLeaseUpdate(table, input));
    },

    markStreamStarted: (input) => markMetaOnce(input, 'startedAtMs'),
    markStreamFinished: (input) => markMetaOnce(input, 'finishedAtMs'),

    async releasePlannerLease(input) {
      return (await metaUpdate(`release planner lease of ${input.stream}`, releasePlannerLeaseUpdate(table, input))) ? 'applied' : 'fenced';
    },

    async recordChange({ stream, epoch, ownerToken, change }) {
      const res = await writer.sendTransaction(`record change on ${stream}`, [
        fencedChangeAction(table, stream, epoch, ownerToken, change),
      ]);
      return res.ok ? 'applied' : 'fenced';
    },

    async takePlannerLoop(input): Promise<LoopTake> {
      try {
        const res = await send(`take planner loop of ${input.stream}`, ({ doc }) =>
          doc.send(new UpdateCommand(takePlannerLoopUpdate(table, input))),
        );
        return { taken: true, previous: splitLoop(res.Attributes ?? {}).loop ?? {} };
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        const holder = splitLoop(err.Item ? unmarshall(err.Item) : {}).loop ?? {};
        if (!input.asSuccessor || holder.ownerToken === undefined || !maySucceed(holder, input.ownerToken)) return { taken: false, holder };
        return { taken: false, holder: await recordSuccessor(input.stream, holder.ownerToken, input.ownerToken) };
      }
    },

    async renewPlannerLoop(input): Promise<LoopRenewal> {
      try {
        const res = await send(`renew planner loop of ${input.stream}`, ({ doc }) =>
          doc.send(new UpdateCommand(renewPlannerLoopUpdate(table, input))),
        );
        const successor = splitLoop(res.Attributes ?? {}).loop?.successor;
        return successor !== undefined ? { held: true, successor } : { held: true };
      } catch (err) {
        if (err instanceof ConditionalCheckFailedException) return { held: false };
        throw err;
      }
    },

    async claimChainTick(input) {
      return (await metaUpdate(`claim tick ${input.seq} of the tick chain of ${input.stream}`, claimChainTickUpdate(table, input)))
        ? 'applied'
        : 'condition-failed';
    },

    async releasePlannerLoop(input) {
      return (await metaUpdate(`release planner loop of ${input.stream}`, releasePlannerLoopUpdate(table, input)))
        ? 'applied'
        : 'condition-failed';
    },
  };
}
