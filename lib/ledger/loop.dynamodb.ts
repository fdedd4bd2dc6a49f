/**
 * The planner loop lease on DynamoDB (ports/planner-loop.ts): flat `loop*` attributes on the
 * stream's META item, beside the planner lease's, and the conditional updates that carry the port's
 * rules (`mayTakeLoop`, `maySucceed`, `takenLoop`, `releasedLoop`) as expressions. Flat attributes,
 * not a map: a nested path cannot be SET on an item that has no map there yet.
 */
import type { UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import type { PlannerLoopState } from '../ports/planner-loop';
import { keys } from './keys.dynamodb';

/** Each field of the loop state and the attribute holding it. */
const ATTRIBUTES = {
  ownerToken: 'loopOwner',
  sinceMs: 'loopSinceMs',
  expiresAtMs: 'loopExpiresAtMs',
  successor: 'loopSuccessor',
  lastTickAtMs: 'loopLastTickAtMs',
  nextTickDueMs: 'loopNextTickDueMs',
} as const satisfies Record<keyof PlannerLoopState, string>;

type Item = Record<string, unknown>;

/** The loop state in a META item (unmarshalled), and the item without its loop attributes. */
export function splitLoop(item: Item): { loop?: PlannerLoopState; rest: Item } {
  const rest: Item = { ...item };
  const loop: Record<string, unknown> = {};
  for (const [field, attribute] of Object.entries(ATTRIBUTES)) {
    if (rest[attribute] !== undefined) loop[field] = rest[attribute];
    delete rest[attribute];
  }
  return { rest, ...(Object.keys(loop).length ? { loop: loop as PlannerLoopState } : {}) };
}

/**
 * Takes the loop (`mayTakeLoop`: no owner, an expired one, or the caller), consuming the successor
 * and the next due time; a META item that does not exist yet is created with the planner lease free.
 * ALL_OLD returns what the last holder left, or, on failure, who holds it.
 */
export function takePlannerLoopUpdate(
  table: string,
  t: { stream: string; ownerToken: string; nowMs: number; leaseMs: number },
): UpdateCommandInput {
  return {
    TableName: table,
    Key: keys.meta(t.stream),
    UpdateExpression:
      'SET loopOwner = :me, loopSinceMs = :now, loopExpiresAtMs = :until, #s = :stream, ' +
      'epoch = if_not_exists(epoch, :zero), leaseExpiresAtMs = if_not_exists(leaseExpiresAtMs, :zero), ' +
      'ownerToken = if_not_exists(ownerToken, :none) REMOVE loopSuccessor, loopNextTickDueMs',
    ConditionExpression: 'attribute_not_exists(loopOwner) OR loopExpiresAtMs < :now OR loopOwner = :me',
    ExpressionAttributeNames: { '#s': 'stream' },
    ExpressionAttributeValues: {
      ':me': t.ownerToken,
      ':now': t.nowMs,
      ':until': t.nowMs + t.leaseMs,
      ':stream': t.stream,
      ':zero': 0,
      ':none': '',
    },
    ReturnValues: 'ALL_OLD',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** Records the caller as the successor of `holder`'s loop (`maySucceed`: none recorded, or the caller). */
export function recordSuccessorUpdate(table: string, r: { stream: string; holder: string; ownerToken: string }): UpdateCommandInput {
  return {
    TableName: table,
    Key: keys.meta(r.stream),
    UpdateExpression: 'SET loopSuccessor = :me',
    ConditionExpression: 'loopOwner = :holder AND (attribute_not_exists(loopSuccessor) OR loopSuccessor = :me)',
    ExpressionAttributeValues: { ':me': r.ownerToken, ':holder': r.holder },
    ReturnValues: 'ALL_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** Extends the holder's loop and records its last tick; ALL_NEW says whether a successor waits. */
export function renewPlannerLoopUpdate(
  table: string,
  r: { stream: string; ownerToken: string; nowMs: number; leaseMs: number; lastTickAtMs?: number },
): UpdateCommandInput {
  const tick = r.lastTickAtMs !== undefined;
  return {
    TableName: table,
    Key: keys.meta(r.stream),
    UpdateExpression: `SET loopExpiresAtMs = :until${tick ? ', loopLastTickAtMs = :tick' : ''}`,
    ConditionExpression: 'loopOwner = :me',
    ExpressionAttributeValues: { ':me': r.ownerToken, ':until': r.nowMs + r.leaseMs, ...(tick ? { ':tick': r.lastTickAtMs } : {}) },
    ReturnValues: 'ALL_NEW',
  };
}

/** Hands the loop over (`releasedLoop`): no owner; the successor, the last tick and the next due time stay. */
export function releasePlannerLoopUpdate(
  table: string,
  r: { stream: string; ownerToken: string; lastTickAtMs?: number; nextTickDueMs: number },
): UpdateCommandInput {
  const tick = r.lastTickAtMs !== undefined;
  const setTick = tick ? ', loopLastTickAtMs = :tick' : '';
  return {
    TableName: table,
    Key: keys.meta(r.stream),
    UpdateExpression: `SET loopNextTickDueMs = :due${setTick} REMOVE loopOwner, loopSinceMs, loopExpiresAtMs`,
    ConditionExpression: 'loopOwner = :me',
    ExpressionAttributeValues: { ':me': r.ownerToken, ':due': r.nextTickDueMs, ...(tick ? { ':tick': r.lastTickAtMs } : {}) },
  };
}

/**
 * Claims tick `seq` of the stream's chain (`mayClaimChainTick`: the chain's last claimed tick is
 * `seq - 1`, or none and `seq` is 1, or the same claimant claimed `seq` already: the SDK sent the
 * claim again after a lost answer), creating the META item with the planner lease free when there
 * is none. The chain is one map attribute, set whole: a nested path cannot be SET where no map is yet.
 */
export function claimChainTickUpdate(
  table: string,
  c: { stream: string; seq: number; nowMs: number; claimedBy: string },
): UpdateCommandInput {
  const mine = '(tickChain.seq = :seq AND tickChain.claimedBy = :me)';
  return {
    TableName: table,
    Key: keys.meta(c.stream),
    UpdateExpression:
      'SET tickChain = :chain, #s = :stream, epoch = if_not_exists(epoch, :zero), ' +
      'leaseExpiresAtMs = if_not_exists(leaseExpiresAtMs, :zero), ownerToken = if_not_exists(ownerToken, :none)',
    ConditionExpression: `${c.seq === 1 ? 'attribute_not_exists(tickChain) OR ' : ''}tickChain.seq = :prev OR ${mine}`,
    ExpressionAttributeNames: { '#s': 'stream' },
    ExpressionAttributeValues: {
      ':chain': { seq: c.seq, lastTickAtMs: c.nowMs, claimedBy: c.claimedBy },
      ':prev': c.seq - 1,
      ':seq': c.seq,
      ':me': c.claimedBy,
      ':stream': c.stream,
      ':zero': 0,
      ':none': '',
    },
  };
}
