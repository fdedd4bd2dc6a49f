/**
 * Sending the ledger rules' writes to DynamoDB (layout 2) in as few requests as their items allow.
 * A unit is one write of the rules (its steps: all or none). Units are packed into requests in
 * order: a unit joins the first request after the last one touching its items in which it changes
 * no document path another unit of the request changes, so writes of one item keep their order and
 * the writes of many partitions of a group share one UpdateItem. A request of one group item (fenced
 * by its own `ep` for planner writes) is an UpdateItem; anything else a transaction, with the META
 * fence check first for planner writes. A request that fails a condition is judged unit by unit on
 * the images DynamoDB returns, and the units that still hold are sent again.
 */
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { CancellationReason } from '@aws-sdk/client-dynamodb';
import type { ItemStep } from '../ports/ledger-rules/item-step';
import { actionOf, type ItemWriteBuilder } from './expression.dynamodb';
import { compileSteps, fenceAdmits, holdsOnGroupImage, keyId, type ItemWrites, type StepContext } from './steps.dynamodb';
import type { Item } from './items.dynamodb';
import { FENCE_ATTRIBUTE } from './groups.dynamodb';
import type { TxAction } from './transactions.dynamodb';

/** One write of the rules. */
export type Unit = { index: number; steps: readonly ItemStep[] };
export type UnitOutcome = 'applied' | 'condition-failed' | 'fenced';

/** Items one transaction takes besides the fence check. */
const MAX_TX_ITEMS = 99;
/** An expression DynamoDB takes is at most 4 KB; a request whose expressions grow past this is closed. */
const MAX_EXPRESSION_CHARS = 3500;

/** A request being packed: its units and their merged item writes; `group`: one group item's UpdateItem, else a transaction. */
type Request = { kind: 'group' | 'tx'; units: Unit[]; writes: ItemWrites };

const isGroupKey = (id: string): boolean => id.split('|')[1]?.startsWith('G#') === true;

/** Whether two document paths overlap (equal, or one inside the other). */
const overlap = (a: string, b: string): boolean => a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);

/**
 * Whether two writes of one item depend on their order: one changes a path the other names (in a
 * condition or a change). The fence is set to the same epoch by every unit of a run: no dependency.
 */
function dependent(a: ItemWriteBuilder, b: ItemWriteBuilder): boolean {
  const crosses = (changed: Set<string>, named: Set<string>) => {
    for (const p of changed) if (p !== FENCE_ATTRIBUTE) for (const q of named) if (q !== FENCE_ATTRIBUTE && overlap(p, q)) return true;
    return false;
  };
  return crosses(a.changed, b.touched) || crosses(b.changed, a.touched);
}

/** Whether `unit`'s writes can join `req`: same kind, independent of its writes, room for its items, expressions within bounds. */
function fits(req: Request, unitWrites: ItemWrites, kind: Request['kind']): boolean {
  if (req.kind !== kind) return false;
  const maxItems = kind === 'group' ? 1 : MAX_TX_ITEMS;
  let items = req.writes.size;
  for (const [id, b] of unitWrites) {
    const there = req.writes.get(id);
    if (!there) {
      items++;
      continue;
    }
    if (there.putItem || b.putItem || dependent(there, b) || there.size + b.size > MAX_EXPRESSION_CHARS) return false;
  }
  return items <= maxItems;
}

/**
 * Packs units into requests in order (see the module comment). A unit goes into the first request
 * with room after every request holding a write it depends on (same item, one changing what the
 * other names): writes whose order matters keep it, the others share requests. A unit writing one
 * group item goes into that item's UpdateItem when `groupLimit` is 1, into a transaction with
 * others when it is more (a run writing many groups: fewer requests, twice the units); any other
 * unit into a transaction.
 */
export function packRequests(ctx: StepContext, units: readonly Unit[], groupLimit: number): Request[] {
  const requests: Request[] = [];
  /** Per item, each request's own write of it (to find the requests a unit depends on). */
  const byItem = new Map<string, Array<{ at: number; b: ItemWriteBuilder }>>();
  for (const unit of units) {
    const own = compileSteps(ctx, unit.steps);
    const ids = [...own.keys()];
    const kind = ids.length === 1 && isGroupKey(ids[0] as string) && groupLimit === 1 ? 'group' : 'tx';
    let at = 0;
    for (const [id, b] of own) for (const w of byItem.get(id) ?? []) if (dependent(w.b, b)) at = Math.max(at, w.at + 1);
    while (at < requests.length && !fits(requests[at] as Request, own, kind)) at++;
    if (at === requests.length) requests.push({ kind, units: [], writes: new Map() });
    const req = requests[at] as Request;
    req.units.push(unit);
    compileSteps(ctx, unit.steps, req.writes);
    for (const [id, b] of own) byItem.set(id, [...(byItem.get(id) ?? []), { at, b }]);
  }
  return requests;
}

/**
 * Requests in waves: a request runs in the wave after the last earlier request sharing an item with
 * it, so requests of one item keep their order and requests of other items run side by side.
 */
export function wavesOf(requests: Request[]): Request[][] {
  const out: Request[][] = [];
  const levelOf = new Map<string, number>();
  for (const r of requests) {
    const ids = [...r.writes.keys()];
    const level = Math.max(0, ...ids.map((id) => (levelOf.get(id) ?? -1) + 1));
    (out[level] ??= []).push(r);
    for (const id of ids) levelOf.set(id, level);
  }
  return out;
}

/** What the adapter gives the sender: one UpdateItem, one transaction. */
export type RequestTransport = {
  table: string;
  /** An UpdateItem (or PutItem) of one builder: applied, or the image its condition failed on. */
  sendOne(what: string, b: ItemWriteBuilder): Promise<{ ok: true } | { ok: false; image?: Item }>;
  /** A transaction of `actions`: applied, or the cancellation reasons (conflicts already retried). */
  sendTransaction(what: string, actions: TxAction[]): Promise<{ ok: true } | { ok: false; reasons: CancellationReason[] }>;
  /** The META fence check of planner writes (first action of their transactions). */
  fenceCheck?: TxAction;
  /** The planner epoch of fenced writes (group items' `ep`). */
  fenceEpoch?: number;
};

/**
 * Sends one request and judges a failure: each unit's outcome, the units to send again (all still
 * holding their conditions, none applied), and whether the fence refused it.
 */
export async function sendRequest(
  ctx: StepContext,
  t: RequestTransport,
  what: string,
  req: Request,
): Promise<{ outcomes: Map<number, UnitOutcome>; again: Unit[] }> {
  const outcomes = new Map<number, UnitOutcome>();
  const ids = [...req.writes.keys()];
  const single = req.kind === 'group' || (ids.length === 1 && t.fenceCheck === undefined);
  if (single) {
    const res = await t.sendOne(what, req.writes.get(ids[0] as string) as ItemWriteBuilder);
    if (res.ok) return { outcomes: new Map(req.units.map((u) => [u.index, 'applied'])), again: [] };
    return judge(ctx, t, req, new Map([[ids[0] as string, res.image]]), new Set(ids));
  }
  const actions = [...(t.fenceCheck ? [t.fenceCheck] : []), ...[...req.writes.values()].map((b) => actionOf(t.table, b) as TxAction)];
  const res = await t.sendTransaction(what, actions);
  if (res.ok) return { outcomes: new Map(req.units.map((u) => [u.index, 'applied'])), again: [] };
  const offset = t.fenceCheck ? 1 : 0;
  if (t.fenceCheck && res.reasons[0]?.Code === 'ConditionalCheckFailed') {
    for (const u of req.units) outcomes.set(u.index, 'fenced');
    return { outcomes, again: [] };
  }
  const images = new Map<string, Item | undefined>();
  const failed = new Set<string>();
  ids.forEach((id, i) => {
    const reason = res.reasons[i + offset];
    if (reason?.Code !== 'ConditionalCheckFailed') return;
    failed.add(id);
    images.set(id, reason.Item ? unmarshall(reason.Item as never) : undefined);
  });
  return judge(ctx, t, req, images, failed);
}

/**
 * The outcome of each unit of a request whose conditions failed on the items `failed`: a group item's
 * image tells which units failed (a fence newer than the write: all are fenced); any other item's
 * failure fails every unit writing it. The others are sent again.
 */
function judge(
  ctx: StepContext,
  t: RequestTransport,
  req: Request,
  images: Map<string, Item | undefined>,
  failed: Set<string>,
): { outcomes: Map<number, UnitOutcome>; again: Unit[] } {
  const outcomes = new Map<number, UnitOutcome>();
  const again: Unit[] = [];
  for (const unit of req.units) {
    const mine = compileSteps(ctx, unit.steps);
    let verdict: UnitOutcome | undefined;
    for (const id of mine.keys()) {
      if (!failed.has(id)) continue;
      const image = images.get(id);
      if (!isGroupKey(id) || image === undefined) verdict = 'condition-failed';
      else if (t.fenceEpoch !== undefined && !fenceAdmits(image, t.fenceEpoch)) verdict = 'fenced';
      else if (!unit.steps.every((s) => !touchesGroup(ctx, s, id) || holdsOnGroupImage(image, s, ctx.stream))) verdict = 'condition-failed';
      if (verdict === 'fenced') break;
    }
    if (verdict) outcomes.set(unit.index, verdict);
    else again.push(unit);
  }
  // A condition that failed with no unit to blame (an image we could not judge) must not loop.
  if (again.length === req.units.length) for (const u of again.splice(0)) outcomes.set(u.index, 'condition-failed');
  return { outcomes, again };
}

/** Whether `step` writes the group item `id`. */
function touchesGroup(ctx: StepContext, step: ItemStep, id: string): boolean {
  return compileSteps(ctx, [step]).has(id);
}

export { keyId };
