/**
 * Building one DynamoDB write's expressions from parts (ledger layout 2): document paths into group
 * items, conditions and SET/REMOVE clauses gathered from several rule steps into one request, with
 * placeholders unique within it, and the ledger rules' requirements and changes compiled on a path.
 */
import type { ItemChange, Requirement } from '../ports/ledger-rules/item-step';
import type { Key } from './keys.dynamodb';

/** One item's write being built: its key, conditions (all must hold), SET and REMOVE clauses. */
export class ItemWriteBuilder {
  private readonly names = new Map<string, string>();
  private readonly values: Record<string, unknown> = {};
  private readonly conditions: string[] = [];
  private readonly sets: string[] = [];
  private readonly removes: string[] = [];
  /** Document paths this write changes (two changes of one path cannot share a request). */
  readonly changed = new Set<string>();
  /** Document paths its conditions or changes name (a write naming a path another changes depends on the order). */
  readonly touched = new Set<string>();
  /** A whole item to put (its conditions apply to the put); no SET or REMOVE then. */
  putItem?: Record<string, unknown>;
  private next = 0;

  constructor(readonly key: Key) {}

  /** A document path of attribute names (`['e1', 'r', '120', 'p']` -> `#a0.#a1.#a2.#a3`). */
  path(parts: readonly string[]): string {
    this.touched.add(parts.join('.'));
    return parts
      .map((n) => {
        let p = this.names.get(n);
        if (!p) this.names.set(n, (p = `#a${this.names.size}`));
        return p;
      })
      .join('.');
  }

  /** A placeholder for `v`. */
  value(v: unknown): string {
    const p = `:v${this.next++}`;
    this.values[p] = v;
    return p;
  }

  require(condition: string): this {
    this.conditions.push(condition);
    return this;
  }

  set(parts: readonly string[], v: unknown): this {
    this.changed.add(parts.join('.'));
    this.sets.push(`${this.path(parts)} = ${this.value(v)}`);
    return this;
  }

  /** Sets a path to an expression built from this builder's placeholders (e.g. `if_not_exists(...)`). */
  setRaw(parts: readonly string[], expression: string): this {
    this.changed.add(parts.join('.'));
    this.sets.push(`${this.path(parts)} = ${expression}`);
    return this;
  }

  /** Adds `n` to a number (absent = 0). */
  add(parts: readonly string[], n: number): this {
    this.changed.add(parts.join('.'));
    const p = this.path(parts);
    this.sets.push(`${p} = if_not_exists(${p}, ${this.value(0)}) + ${this.value(n)}`);
    return this;
  }

  remove(parts: readonly string[]): this {
    this.changed.add(parts.join('.'));
    this.removes.push(this.path(parts));
    return this;
  }

  get hasChanges(): boolean {
    return this.sets.length + this.removes.length > 0;
  }

  get conditionExpression(): string | undefined {
    return this.conditions.length ? this.conditions.join(' AND ') : undefined;
  }

  get updateExpression(): string {
    return [this.sets.length ? `SET ${this.sets.join(', ')}` : '', this.removes.length ? `REMOVE ${this.removes.join(', ')}` : '']
      .filter(Boolean)
      .join(' ');
  }

  /** The expression attribute names and values (left out when empty: DynamoDB refuses empty maps). */
  attributes(): { ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Record<string, unknown> } {
    return {
      ...(this.names.size ? { ExpressionAttributeNames: Object.fromEntries([...this.names].map(([n, p]) => [p, n])) } : {}),
      ...(Object.keys(this.values).length ? { ExpressionAttributeValues: { ...this.values } } : {}),
    };
  }

  /** The length of the expressions so far (DynamoDB takes at most 4 KB each). */
  get size(): number {
    return Math.max((this.conditionExpression ?? '').length, this.updateExpression.length);
  }
}

/** The item's write as an UpdateItem input (conditions and changes; ALL_OLD on a failed condition). */
export function updateInput(table: string, b: ItemWriteBuilder, returnNew = false) {
  return {
    TableName: table,
    Key: b.key,
    UpdateExpression: b.updateExpression,
    ...(b.conditionExpression ? { ConditionExpression: b.conditionExpression } : {}),
    ...b.attributes(),
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    ...(returnNew ? { ReturnValues: 'ALL_NEW' as const } : {}),
  };
}

/** The item's write as a transaction action: Put, Update, or a ConditionCheck when it only has conditions. */
export function actionOf(table: string, b: ItemWriteBuilder) {
  const condition = b.conditionExpression ? { ConditionExpression: b.conditionExpression } : {};
  if (b.putItem) return { Put: { TableName: table, Item: b.putItem, ...condition, ...b.attributes() } };
  if (!b.hasChanges) {
    return {
      ConditionCheck: {
        TableName: table,
        Key: b.key,
        ConditionExpression: b.conditionExpression ?? 'attribute_exists(pk)',
        ...b.attributes(),
      },
    };
  }
  return { Update: { ...updateInput(table, b) } };
}

/**
 * One requirement of a rule on the value at `parts` (encoded by `encode`), as a condition; `stored`
 * is the value an absent field stands for (not stored: see groups.dynamodb.ts).
 */
export function requirementCondition(
  b: ItemWriteBuilder,
  parts: readonly string[],
  r: Requirement,
  encode: (v: unknown) => unknown,
  stored?: unknown,
): string {
  const p = b.path(parts);
  if ('is' in r) {
    if (r.is === undefined) return `attribute_not_exists(${p})`;
    const v = b.value(encode(r.is));
    const absent = r.absentIs ?? stored;
    return absent !== undefined && r.is === absent ? `(attribute_not_exists(${p}) OR ${p} = ${v})` : `${p} = ${v}`;
  }
  if ('isNot' in r) {
    const none = `NOT ${p} IN (${r.isNot.map((x) => b.value(encode(x))).join(', ')})`;
    return stored !== undefined && r.isNot.includes(stored) ? `(attribute_exists(${p}) AND ${none})` : none;
  }
  return 'atLeast' in r ? `${p} >= ${b.value(r.atLeast)}` : `${p} <= ${b.value(r.atMost)}`;
}

/** A rule's change of the fields under `base`, each field stored under `nameOf(field)` (undefined: not stored here). */
export function applyChange(
  b: ItemWriteBuilder,
  base: readonly string[],
  change: ItemChange,
  nameOf: (field: string) => string | undefined,
  encode: (field: string, v: unknown) => unknown,
): void {
  for (const [field, v] of Object.entries(change.set ?? {})) {
    const name = nameOf(field);
    if (name !== undefined && v !== undefined) b.set([...base, name], encode(field, v));
  }
  for (const [field, n] of Object.entries(change.add ?? {})) {
    const name = nameOf(field);
    if (name !== undefined) b.add([...base, name], n);
  }
  for (const field of change.remove ?? []) {
    const name = nameOf(field);
    if (name !== undefined) b.remove([...base, name]);
  }
}
