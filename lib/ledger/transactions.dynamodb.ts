/**
 * The ledger's DynamoDB transaction actions: the planner fence, the steps of the ledger rules
 * (plan writes, rewinds) as actions, and the processor's progress and completion actions.
 */
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { ItemStep } from '../ports/ledger-rules/item-step';
import { plannerFence } from '../ports/ledger-rules/fence';
import { planWriteSteps } from '../ports/ledger-rules/plan-write';
import { rewindPartitionStep } from '../ports/ledger-rules/rewind';
import type { PlanWrite, RewindPartition } from '../ports/ledger';
import type { OperatorChange } from '../ports/ledger-state';
import { ABSENT, changeUpdate, requirementsCondition } from './conditions.dynamodb';
import { codec, DONE_RANGE_TTL_SEC, type Item } from './items.dynamodb';
import { itemKey, keys } from './keys.dynamodb';

export type TxAction = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** The condition every fenced planner transaction checks first. */
export function fenceCheck(table: string, stream: string, epoch: number, ownerToken: string): TxAction {
  const fence = requirementsCondition(plannerFence(epoch, ownerToken));
  return {
    ConditionCheck: {
      TableName: table,
      Key: keys.meta(stream),
      ConditionExpression: fence.expression,
      ExpressionAttributeNames: fence.names,
      ExpressionAttributeValues: fence.values,
    },
  };
}

/** Puts `item` only if nothing is stored under its key. */
export function putIfAbsent(table: string, item: Item): TxAction {
  return { Put: { TableName: table, Item: item, ConditionExpression: ABSENT } };
}

/** A map of expression names or values, left out when empty (DynamoDB refuses an empty one). */
const orNone = <T extends object>(m: T): T | undefined => (Object.keys(m).length > 0 ? m : undefined);

/**
 * An update step as one conditional UpdateItem (alone, or a transaction's Update action): its
 * requirements are the condition. A range finished by it leaves the open-ranges index and gets its
 * expiry (this layout's own attributes, not the rule's).
 */
export function stepUpdate(table: string, stream: string, step: Extract<ItemStep, { kind: 'update' }>) {
  const finishes = step.ref.item === 'range' && step.change.set?.status === 'done';
  const change = finishes
    ? {
        ...step.change,
        set: { ...step.change.set, expiresAt: Math.floor(Number(step.change.set?.finishedAtMs) / 1000) + DONE_RANGE_TTL_SEC },
        remove: [...(step.change.remove ?? []), 'openPk'],
      }
    : step.change;
  const cond = requirementsCondition(step.when);
  const update = changeUpdate(change);
  return {
    TableName: table,
    Key: itemKey(stream, step.ref),
    UpdateExpression: update.expression,
    ConditionExpression: cond.expression,
    ExpressionAttributeNames: orNone({ ...cond.names, ...update.names }),
    ExpressionAttributeValues: orNone({ ...cond.values, ...update.values }),
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
  };
}

/** One step of a ledger rule as a transaction action: its requirements are the action's condition. */
function stepAction(table: string, stream: string, step: ItemStep): TxAction {
  switch (step.kind) {
    case 'create-partition':
      return putIfAbsent(table, codec.partitionItem(step.value));
    case 'create-range':
      return putIfAbsent(table, codec.rangeItem(step.value));
    case 'create-loss':
      return putIfAbsent(table, codec.lossItem(step.value));
    case 'create-closed':
      return putIfAbsent(table, codec.closedItem(step.value));
    case 'create-dead-letter':
      return putIfAbsent(table, codec.deadLetterItem(step.value));
    case 'put-delivery':
      return { Put: { TableName: table, Item: codec.deliveryItem(step.value) } };
    case 'update':
      return { Update: stepUpdate(table, stream, step) };
    case 'replace-partition': {
      const cond = requirementsCondition(step.when);
      return {
        Put: {
          TableName: table,
          Item: codec.partitionItem(step.value),
          ConditionExpression: cond.expression,
          ExpressionAttributeNames: orNone(cond.names),
          ExpressionAttributeValues: orNone(cond.values),
        },
      };
    }
    case 'delete':
      return { Delete: { TableName: table, Key: itemKey(stream, step.ref) } };
  }
}

/** The transaction actions of a rule's steps (one write: one transaction). */
export function stepActions(table: string, stream: string, steps: readonly ItemStep[]): TxAction[] {
  return steps.map((step) => stepAction(table, stream, step));
}

/** The transaction actions of one planner write (its rule's steps, always in one transaction). */
export function planWriteActions(table: string, stream: string, w: PlanWrite): TxAction[] {
  return planWriteSteps(w).map((step) => stepAction(table, stream, step));
}

/** The partition's own action of an operator rewind (rule: `rewindPartitionStep`). */
export function rewindPartitionAction(table: string, stream: string, p: RewindPartition): TxAction {
  return stepAction(table, stream, rewindPartitionStep(p));
}

/** Records an operator change on META; the update itself carries the planner fence (one action per item). */
export function fencedChangeAction(table: string, stream: string, epoch: number, ownerToken: string, change: OperatorChange): TxAction {
  const fence = requirementsCondition(plannerFence(epoch, ownerToken));
  return {
    Update: {
      TableName: table,
      Key: keys.meta(stream),
      UpdateExpression: 'SET lastChange = :change',
      ConditionExpression: fence.expression,
      ExpressionAttributeNames: fence.names,
      ExpressionAttributeValues: { ':change': change, ...fence.values },
    },
  };
}

/** Removes a range item only in the status the operator's read saw (done history, or a parked range). */
export function deleteRangeAction(
  table: string,
  stream: string,
  r: { topic: string; partition: number; from: number; incarnation?: number },
  status: 'done' | 'parked',
): TxAction {
  return {
    Delete: {
      TableName: table,
      Key: keys.range(stream, r),
      ConditionExpression: '#st = :status',
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: { ':status': status },
    },
  };
}

/** Marks a dead letter re-driven, once: a second re-drive (or a missing item) fails the condition. */
export function redriveAction(
  table: string,
  stream: string,
  d: { topic: string; partition: number; offset: number; incarnation?: number },
  nowMs: number,
): TxAction {
  return {
    Update: {
      TableName: table,
      Key: keys.deadLetter(stream, d),
      UpdateExpression: 'SET redrivenAtMs = :now',
      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(redrivenAtMs)',
      ExpressionAttributeValues: { ':now': nowMs },
    },
  };
}
