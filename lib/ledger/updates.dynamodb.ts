/**
 * The ledger's single-item conditional updates on DynamoDB (UpdateItem inputs): the planner lease
 * and start/finish marks on META, and the processor's lease take and lease-held range updates.
 */
import type { UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { LEASE_TAKEABLE_STATUSES } from '../ports/ledger-rules/lease';
import { plannerFence } from '../ports/ledger-rules/fence';
import { requirementsCondition } from './conditions.dynamodb';
import { compact } from './items.dynamodb';
import { keys, type Key } from './keys.dynamodb';
import type { PendingStart } from '../ports/ledger-state';
import type { KeptPlannerLease } from '../ports/ledger';

/**
 * Takes a range lease (KCL-style: counts the attempt), conditional on the range ending at the
 * requested `until`, so a forged or stale request changes nothing; ALL_OLD tells why it failed.
 */
export function takeLeaseUpdate(
  table: string,
  key: Key,
  t: { until: number; leaseToken: string; nowMs: number; leaseMs: number; maxAttempts: number },
): UpdateCommandInput {
  // The lease rules (ports/ledger-rules/lease.ts) as one conditional write: `leaseRefusal`'s reasons
  // are the condition (judged again on ALL_OLD when it fails), `takenRange` is the update.
  const takeable = Object.fromEntries(LEASE_TAKEABLE_STATUSES.map((st) => [`:${st}`, st]));
  return {
    TableName: table,
    Key: key,
    UpdateExpression:
      'SET #st = :leased, leaseToken = :token, leaseExpiresAtMs = :expires, ' +
      'attempts = attempts + :one, firstLeasedAtMs = if_not_exists(firstLeasedAtMs, :now)',
    ConditionExpression:
      'attribute_exists(pk) AND #until = :until AND attempts < :max AND ' +
      `(#st IN (${Object.keys(takeable).join(', ')}) OR (#st = :leased AND leaseExpiresAtMs < :now))`,
    ExpressionAttributeNames: { '#st': 'status', '#until': 'until' },
    ExpressionAttributeValues: {
      ':leased': 'leased',
      ...takeable,
      ':token': t.leaseToken,
      ':expires': t.nowMs + t.leaseMs,
      ':until': t.until,
      ':one': 1,
      ':now': t.nowMs,
      ':max': t.maxAttempts,
    },
    ReturnValues: 'ALL_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/**
 * Sets a one-time timestamp on the META item, fenced by the planner epoch; ALL_OLD tells fenced from
 * set. The start mark carries the partitions the first run could not register, when there are any.
 */
export function markMetaOnceUpdate(
  table: string,
  m: { stream: string; epoch: number; ownerToken: string; nowMs: number; pendingStart?: PendingStart[] },
  attribute: 'startedAtMs' | 'finishedAtMs',
): UpdateCommandInput {
  const pending = attribute === 'startedAtMs' && m.pendingStart?.length ? m.pendingStart.map((t) => compact({ ...t })) : undefined;
  const cond = requirementsCondition([...plannerFence(m.epoch, m.ownerToken), { field: attribute, is: undefined }]);
  return {
    TableName: table,
    Key: keys.meta(m.stream),
    UpdateExpression: `SET ${attribute} = :now${pending ? ', pendingStart = :pending' : ''}`,
    ConditionExpression: cond.expression,
    ExpressionAttributeNames: cond.names,
    ExpressionAttributeValues: { ':now': m.nowMs, ...cond.values, ...(pending ? { ':pending': pending } : {}) },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/**
 * Takes the planner lease if it is free, expired or already ours, bumping the epoch (I5), on a
 * ledger of `layout` only: a new stream (no META item, or one a loop take created at epoch 0) is
 * marked with it; a stream that planned under another layout is refused (the caller says which).
 */
export function acquirePlannerLeaseUpdate(
  table: string,
  a: { stream: string; ownerToken: string; nowMs: number; leaseMs: number; previous?: KeptPlannerLease; deadLoopOwner?: string },
  layout: number,
): UpdateCommandInput {
  const prev = a.previous;
  const confirm = prev?.confirmDispatches ? ', confirmedEpoch = :prevEpoch' : '';
  return {
    TableName: table,
    Key: keys.meta(a.stream),
    UpdateExpression:
      'SET epoch = if_not_exists(epoch, :zero) + :one, ownerToken = :owner, leaseExpiresAtMs = :until, #s = :stream, ' +
      // A loop's tick taking over its kept lease leaves a request for it standing: the loop releases after the tick.
      `lastRunAtMs = :now, layout = :layout${confirm}${prev ? '' : ' REMOVE leaseWanted'}`,
    ConditionExpression:
      '(attribute_not_exists(pk) OR leaseExpiresAtMs < :now OR ownerToken = :owner' +
      (prev ? ' OR (ownerToken = :prevOwner AND epoch = :prevEpoch)' : '') +
      (a.deadLoopOwner !== undefined ? ' OR begins_with(ownerToken, :deadLoop)' : '') +
      ') AND (attribute_not_exists(pk) OR layout = :layout OR attribute_not_exists(epoch) OR epoch = :zero)',
    ExpressionAttributeNames: { '#s': 'stream' },
    ExpressionAttributeValues: {
      ':zero': 0,
      ':one': 1,
      ':owner': a.ownerToken,
      ':until': a.nowMs + a.leaseMs,
      ':now': a.nowMs,
      ':stream': a.stream,
      ':layout': layout,
      ...(prev ? { ':prevOwner': prev.ownerToken, ':prevEpoch': prev.epoch } : {}),
      ...(a.deadLoopOwner !== undefined ? { ':deadLoop': `${a.deadLoopOwner}:` } : {}),
    },
    ReturnValues: 'ALL_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** Records who waits for the planner lease (`leaseWanted`) on an existing stream. */
export function requestPlannerLeaseUpdate(table: string, r: { stream: string; ownerToken: string }): UpdateCommandInput {
  return {
    TableName: table,
    Key: keys.meta(r.stream),
    UpdateExpression: 'SET leaseWanted = :me',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':me': r.ownerToken },
  };
}

/** Frees the planner lease, conditional on still holding `epoch`; optionally confirms the run's dispatches. */
export function releasePlannerLeaseUpdate(
  table: string,
  r: { stream: string; epoch: number; ownerToken: string; confirmDispatches?: boolean },
): UpdateCommandInput {
  const fence = requirementsCondition(plannerFence(r.epoch, r.ownerToken));
  return {
    TableName: table,
    Key: keys.meta(r.stream),
    UpdateExpression: r.confirmDispatches ? 'SET leaseExpiresAtMs = :zero, confirmedEpoch = :epoch' : 'SET leaseExpiresAtMs = :zero',
    ConditionExpression: fence.expression,
    ExpressionAttributeNames: fence.names,
    ExpressionAttributeValues: { ':zero': 0, ...(r.confirmDispatches ? { ':epoch': r.epoch } : {}), ...fence.values },
  };
}
