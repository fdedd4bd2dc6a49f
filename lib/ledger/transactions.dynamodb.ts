/**
 * The ledger's DynamoDB transaction actions that no rule step describes: the planner fence check,
 * an operator change record carrying the fence, and a dead letter's re-drive mark.
 */
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { plannerFence } from '../ports/ledger-rules/fence';
import type { OperatorChange } from '../ports/ledger-state';
import { requirementsCondition } from './conditions.dynamodb';
import { keys } from './keys.dynamodb';

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
