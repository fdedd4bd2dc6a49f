/**
 * The ledger rules' item steps on DynamoDB's layout 2: each step compiled into the writes of the
 * items that hold it (a partition's group entry and its `P#` item, a range inside its partition's
 * entry, the stream's other items), gathered per item so that the steps of several writes on one
 * group item become one UpdateItem; and a step judged on a group item's image, to tell which write
 * of a merged request failed its condition.
 */
import { meets, type ItemRef, type ItemStep, type Requirement } from '../ports/ledger-rules/item-step';
import { sameIncarnation } from '../ports/ledger-rules/incarnation';
import type { PartitionState, RangeState } from '../ports/ledger-state';
import { applyChange, ItemWriteBuilder, requirementCondition } from './expression.dynamodb';
import {
  encodeValue,
  entryName,
  entryToStored,
  FENCE_ATTRIBUTE,
  groupKey,
  NOT_DISPATCHED,
  STORED_DEFAULTS,
  PARTITION_FIELDS,
  partitionOfEntry,
  RANGES_FIELD,
  rangesOfEntry,
  rangeToStored,
  staticPart,
  storedName,
} from './groups.dynamodb';
import { codec, type Item } from './items.dynamodb';
import { keys, type Key } from './keys.dynamodb';

/** What compiling needs besides the steps. */
export type StepContext = {
  stream: string;
  /** The group ordinal holding a partition (resolved before compiling). */
  groupOf(topic: string, partition: number): number;
  /** A planner or operator write: the epoch its group items are fenced by (`ep <= epoch`, then `ep = epoch`). */
  fenceEpoch?: number;
};

/** The builders of one request, by item key. */
export type ItemWrites = Map<string, ItemWriteBuilder>;

export const keyId = (k: Key): string => `${k.pk}|${k.sk}`;

/** The builder of the item at `key` (created empty). */
function builder(writes: ItemWrites, key: Key): ItemWriteBuilder {
  const id = keyId(key);
  let b = writes.get(id);
  if (!b) writes.set(id, (b = new ItemWriteBuilder(key)));
  return b;
}

/** The group item builder of a partition, fenced once when the write is a planner's. */
function groupBuilder(ctx: StepContext, writes: ItemWrites, topic: string, partition: number): ItemWriteBuilder {
  const b = builder(writes, groupKey(ctx.stream, ctx.groupOf(topic, partition)));
  if (ctx.fenceEpoch !== undefined && !b.changed.has(FENCE_ATTRIBUTE)) {
    const ep = b.path([FENCE_ATTRIBUTE]);
    b.require(`(attribute_not_exists(${ep}) OR ${ep} <= ${b.value(ctx.fenceEpoch)})`).set([FENCE_ATTRIBUTE], ctx.fenceEpoch);
  }
  return b;
}

const isStatic = (field: string): boolean => PARTITION_FIELDS[field as keyof PartitionState] === 'static';
/** A requirement on an entry field, an absent field standing for its stored default. */
const entryRequirement = (b: ItemWriteBuilder, e: string, r: Requirement): string =>
  requirementCondition(
    b,
    [e, storedName('partition', r.field) as string],
    r,
    (v) => encodeValue('partition', r.field, v),
    STORED_DEFAULTS.partition[r.field],
  );

/** A change of entry fields where setting a field to its stored default removes it. */
function withDefaultsRemoved(c: { set: Record<string, unknown>; add: Record<string, number>; remove: string[] }) {
  const defaults = STORED_DEFAULTS.partition;
  const set = Object.fromEntries(Object.entries(c.set).filter(([f, v]) => defaults[f] === undefined || v !== defaults[f]));
  const remove = [...c.remove, ...Object.keys(c.set).filter((f) => defaults[f] !== undefined && c.set[f] === defaults[f])];
  return { ...c, set, remove };
}

/** The path of a range field: its one letter in the range's map, or the entry's incarnation. */
function rangeFieldPath(ref: { topic: string; partition: number; from: number }, field: string): string[] | undefined {
  const e = entryName(ref.topic, ref.partition);
  if (field === 'incarnation') return [e, 'i'];
  const name = storedName('range', field);
  return name === undefined ? undefined : [e, RANGES_FIELD, String(ref.from), name];
}

/** The condition "the entry is incarnation `n`" (absent = 0). */
function incarnationIs(b: ItemWriteBuilder, e: string, n: number | undefined): string {
  return requirementCondition(b, [e, 'i'], { field: 'incarnation', is: n ?? 0, absentIs: 0 }, (v) => v);
}

/** A partition update: entry fields on the group item, static ones on `P#` (both: one transaction). */
function partitionUpdate(ctx: StepContext, writes: ItemWrites, step: Extract<ItemStep, { kind: 'update' }>): void {
  const { topic, partition } = step.ref;
  const split = <T extends { field: string }>(xs: readonly T[]) => [
    xs.filter((x) => !isStatic(x.field)),
    xs.filter((x) => isStatic(x.field)),
  ];
  const [entryWhen, staticWhen] = split(step.when) as [Requirement[], Requirement[]];
  const fieldsOf = (pick: (f: string) => boolean) => ({
    set: Object.fromEntries(Object.entries(step.change.set ?? {}).filter(([f]) => pick(f))),
    add: Object.fromEntries(Object.entries(step.change.add ?? {}).filter(([f]) => pick(f))),
    remove: (step.change.remove ?? []).filter(pick),
  });
  const entryChange = fieldsOf((f) => !isStatic(f) && storedName('partition', f) !== undefined);
  const staticChange = fieldsOf(isStatic);
  const touches = (when: Requirement[], c: ReturnType<typeof fieldsOf>) =>
    when.length + Object.keys(c.set).length + Object.keys(c.add).length + c.remove.length > 0;
  if (touches(entryWhen, entryChange)) {
    const e = entryName(topic, partition);
    const b = groupBuilder(ctx, writes, topic, partition);
    b.require(`attribute_exists(${b.path([e])})`);
    for (const r of entryWhen) b.require(entryRequirement(b, e, r));
    applyChange(
      b,
      [e],
      withDefaultsRemoved(entryChange),
      (f) => storedName('partition', f),
      (f, v) => encodeValue('partition', f, v),
    );
  }
  if (touches(staticWhen, staticChange)) {
    const b = builder(writes, keys.partition(ctx.stream, topic, partition));
    b.require(`attribute_exists(${b.path(['pk'])})`);
    for (const r of staticWhen) b.require(requirementCondition(b, [r.field], r, (v) => v));
    applyChange(
      b,
      [],
      staticChange,
      (f) => f,
      (_f, v) => v,
    );
  }
}

/** A range update: fields of its map in its partition's entry, which must hold it in the range's incarnation. */
/** The group builder of a range entry, required to exist (of its incarnation) and to meet `when`. */
function requireRange(ctx: StepContext, writes: ItemWrites, ref: Extract<ItemRef, { item: 'range' }>, when: readonly Requirement[]) {
  const e = entryName(ref.topic, ref.partition);
  const b = groupBuilder(ctx, writes, ref.topic, ref.partition);
  b.require(`attribute_exists(${b.path([e, RANGES_FIELD, String(ref.from)])})`).require(incarnationIs(b, e, ref.incarnation));
  for (const r of when) {
    const path = rangeFieldPath(ref, r.field);
    if (!path) throw new Error(`ledger layout: a range requirement on ${r.field} cannot be checked`);
    b.require(requirementCondition(b, path, r, (v) => encodeValue('range', r.field, v)));
  }
  return b;
}

function rangeUpdate(ctx: StepContext, writes: ItemWrites, step: Extract<ItemStep, { kind: 'update' }>): void {
  const ref = step.ref as Extract<ItemRef, { item: 'range' }>;
  const e = entryName(ref.topic, ref.partition);
  const b = requireRange(ctx, writes, ref, step.when);
  // A dispatch record removed is stored as NOT_DISPATCHED: an absent one means "at its planned time".
  const undispatch = step.change.remove?.includes('dispatchedAtMs');
  const change = undispatch
    ? {
        ...step.change,
        set: { ...step.change.set, dispatchedAtMs: NOT_DISPATCHED },
        remove: step.change.remove?.filter((f) => f !== 'dispatchedAtMs'),
      }
    : step.change;
  applyChange(
    b,
    [e, RANGES_FIELD, String(ref.from)],
    change,
    (f) => storedName('range', f),
    (f, v) => encodeValue('range', f, v),
  );
}

/** The `P#` item of a partition: its static part, and the group holding its entry. */
export function partitionStaticItem(stream: string, p: PartitionState, group: number): Item {
  return { ...keys.partition(stream, p.topic, p.partition), type: 'partition', ...staticPart(p), g: group };
}

/** A new or replaced partition: its `P#` item put, its entry set whole (a new incarnation's has no ranges). */
function partitionPut(ctx: StepContext, writes: ItemWrites, p: PartitionState, when?: readonly Requirement[]): void {
  const e = entryName(p.topic, p.partition);
  const s = builder(writes, keys.partition(ctx.stream, p.topic, p.partition));
  s.putItem = partitionStaticItem(ctx.stream, p, ctx.groupOf(p.topic, p.partition));
  const g = groupBuilder(ctx, writes, p.topic, p.partition);
  if (!when) {
    s.require(`attribute_not_exists(${s.path(['pk'])})`);
    g.require(`attribute_not_exists(${g.path([e])})`);
  } else {
    s.require(`attribute_exists(${s.path(['pk'])})`);
    g.require(`attribute_exists(${g.path([e])})`);
    for (const r of when) {
      if (isStatic(r.field)) s.require(requirementCondition(s, [r.field], r, (v) => v));
      else g.require(entryRequirement(g, e, r));
    }
  }
  g.set([e], entryToStored(p));
}

/** An item of the stream's own key written once (data loss, closed incarnation, dead letter), or put whatever is stored. */
function streamItemPut(writes: ItemWrites, item: Item, once: boolean): void {
  const b = builder(writes, { pk: item.pk as string, sk: item.sk as string });
  b.putItem = item;
  if (once) b.require(`attribute_not_exists(${b.path(['pk'])})`);
}

/** Compiles one step into `writes` (adding to the builders of the items it touches). */
export function compileStep(ctx: StepContext, writes: ItemWrites, step: ItemStep): void {
  switch (step.kind) {
    case 'create-partition':
      return partitionPut(ctx, writes, step.value);
    case 'replace-partition':
      return partitionPut(ctx, writes, step.value, step.when);
    case 'update':
      return step.ref.item === 'partition' ? partitionUpdate(ctx, writes, step) : rangeUpdate(ctx, writes, step);
    case 'create-range': {
      const r = step.value;
      const e = entryName(r.topic, r.partition);
      const b = groupBuilder(ctx, writes, r.topic, r.partition);
      b.require(`attribute_exists(${b.path([e])})`)
        .require(`attribute_not_exists(${b.path([e, RANGES_FIELD, String(r.from)])})`)
        .require(incarnationIs(b, e, r.incarnation));
      b.set([e, RANGES_FIELD, String(r.from)], rangeToStored(r as RangeState & Record<string, unknown>));
      return;
    }
    case 'archive-range': {
      const r = step.value;
      const e = entryName(r.topic, r.partition);
      const b = groupBuilder(ctx, writes, r.topic, r.partition);
      const path = [e, RANGES_FIELD, String(r.from)];
      // Absent already (archived by an earlier run whose history write is repeated) is fine too.
      b.require(
        `(attribute_not_exists(${b.path(path)}) OR ${b.path([...path, 's'])} = ${b.value(encodeValue('range', 'status', 'done'))})`,
      );
      b.remove(path);
      return;
    }
    case 'delete': {
      if (step.ref.item !== 'range') throw new Error('ledger layout: partitions are never deleted');
      const b = step.when ? requireRange(ctx, writes, step.ref, step.when) : groupBuilder(ctx, writes, step.ref.topic, step.ref.partition);
      b.remove([entryName(step.ref.topic, step.ref.partition), RANGES_FIELD, String(step.ref.from)]);
      return;
    }
    case 'create-loss':
      return streamItemPut(writes, codec.lossItem(step.value), true);
    case 'create-closed':
      return streamItemPut(writes, codec.closedItem(step.value), true);
    case 'create-dead-letter':
      return streamItemPut(writes, codec.deadLetterItem(step.value), true);
    case 'put-delivery':
      return streamItemPut(writes, codec.deliveryItem(step.value), false);
  }
}

/** The builders of `steps` compiled together (one write of the rules: all or none). */
export function compileSteps(ctx: StepContext, steps: readonly ItemStep[], into: ItemWrites = new Map()): ItemWrites {
  for (const step of steps) compileStep(ctx, into, step);
  return into;
}

/** The partitions a step touches (to resolve their groups before compiling). */
export function partitionsOf(step: ItemStep): Array<{ topic: string; partition: number }> {
  switch (step.kind) {
    case 'create-partition':
    case 'replace-partition':
    case 'create-range':
    case 'archive-range':
      return [{ topic: step.value.topic, partition: step.value.partition }];
    case 'update':
    case 'delete':
      return [{ topic: step.ref.topic, partition: step.ref.partition }];
    default:
      return [];
  }
}

/**
 * Whether a step that writes only group entries holds on the group item's image (as a failed
 * condition returned it): the same rule requirements, judged on the entry's decoded state.
 */
export function holdsOnGroupImage(image: Item | undefined, step: ItemStep, stream: string): boolean {
  const entryOf = (topic: string, partition: number) => image?.[entryName(topic, partition)] as Item | undefined;
  const partitionOf = (topic: string, partition: number) => {
    const entry = entryOf(topic, partition);
    return entry ? partitionOfEntry({ stream, topic, partition }, entry) : undefined;
  };
  const rangeOf = (r: { topic: string; partition: number; from: number; incarnation?: number }) => {
    const p = partitionOf(r.topic, r.partition);
    const entry = entryOf(r.topic, r.partition);
    if (!p || !entry || !sameIncarnation(p, r)) return undefined;
    return rangesOfEntry(entry, p).find((x) => x.from === r.from);
  };
  switch (step.kind) {
    case 'update':
      return step.ref.item === 'partition'
        ? meets(
            partitionOf(step.ref.topic, step.ref.partition),
            step.when.filter((r) => !isStatic(r.field)),
          )
        : meets(rangeOf(step.ref), step.when);
    case 'create-partition':
      return entryOf(step.value.topic, step.value.partition) === undefined;
    case 'replace-partition':
      return meets(
        partitionOf(step.ref.topic, step.ref.partition),
        step.when.filter((r) => !isStatic(r.field)),
      );
    case 'create-range': {
      const p = partitionOf(step.value.topic, step.value.partition);
      return p !== undefined && sameIncarnation(p, step.value) && !rangeOf(step.value);
    }
    case 'archive-range': {
      const r = rangeOf(step.value);
      return r === undefined || r.status === 'done';
    }
    case 'delete':
      return step.when && step.ref.item === 'range' ? meets(rangeOf(step.ref), step.when) : true;
    default:
      throw new Error(`ledger layout: ${step.kind} is not judged on a group image`);
  }
}

/** Whether the group image's fence admits a write of `epoch`. */
export const fenceAdmits = (image: Item | undefined, epoch: number): boolean =>
  typeof image?.[FENCE_ATTRIBUTE] !== 'number' || (image[FENCE_ATTRIBUTE] as number) <= epoch;
