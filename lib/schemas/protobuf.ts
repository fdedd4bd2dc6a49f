/**
 * Protobuf decoding with protobufjs: the registry's `.proto` text is parsed (with its references and
 * the well-known types protobufjs bundles), and the message type a record names is found the way its
 * registry's serializer named it (lib/schemas/wire.ts):
 *
 * - Confluent: a path of indexes, each counting only message types in declaration order (the n-th
 *   top-level message of the file, then its m-th nested message, ...), as Confluent's
 *   ProtobufSchema.toMessageIndexes counts them.
 * - Glue: one index into every message type of the file, nested ones included, sorted by full
 *   name, as Glue's MessageIndexFinder sorts the file's descriptors. Descriptors include the entry
 *   type protoc makes for each map field (`map<..> tags` in `M` is `M.TagsEntry`), which protobufjs
 *   does not list, so their names are added here to keep the positions of the others.
 *
 * Values: field names as written in the `.proto` file, 64-bit integers as decimal strings (as in
 * Protobuf's JSON mapping), enums by name, bytes as Buffers, unset fields at their defaults, maps as
 * objects, also where the schema spells a map out as a repeated entry message (`option map_entry =
 * true`), as schemas a serializer derives from compiled descriptors do (Glue's does).
 */
import * as protobuf from 'protobufjs';
import { UndecodableError } from '../errors';
import type { SchemaReference } from '../ports/schema-registry';
import { readConfluentMessageIndexes, readGlueMessageIndex } from './wire';

export type ProtobufWire = 'confluent' | 'glue';

/** A decoded Protobuf payload and the full name of its message type. */
export type ProtobufValue = { value: unknown; message: string };

const PARSE_OPTIONS = { keepCase: true };
const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: String, defaults: true };

/** A decoder for one `.proto` schema as `wire`'s serializers frame its messages. */
export function compileProtobuf(
  definition: string,
  references: readonly SchemaReference[],
  wire: ProtobufWire,
): (payload: Buffer) => ProtobufValue {
  const root = new protobuf.Root();
  const main = protobuf.parse(definition, root, PARSE_OPTIONS);
  // The file's own top-level messages, before references in the same package join its namespace.
  const fileNamespace = main.package ? root.lookup(main.package) : root;
  const topLevel = fileNamespace instanceof protobuf.Namespace ? messagesOf(fileNamespace) : [];
  const imports = new Set([...(main.imports ?? []), ...(main.weakImports ?? [])]);
  for (const ref of references) {
    const parsed = protobuf.parse(ref.definition, root, PARSE_OPTIONS);
    for (const name of [...(parsed.imports ?? []), ...(parsed.weakImports ?? [])]) imports.add(name);
  }
  addWellKnownTypes(root, imports, new Set(references.map((r) => r.name)));
  root.resolveAll();
  const select = wire === 'confluent' ? confluentSelector(topLevel) : glueSelector(topLevel);
  const entries = new EntryMaps(allMessages(root));
  return (payload) => {
    const { type, message } = select(payload);
    try {
      return { value: entries.convert(type, type.toObject(type.decode(message), TO_OBJECT)), message: fullName(type) };
    } catch (err) {
      throw new UndecodableError(`not a Protobuf ${fullName(type)} (${err instanceof Error ? err.message : String(err)})`, { cause: err });
    }
  };
}

type Selector = (payload: Buffer) => { type: protobuf.Type; message: Buffer };

/** Confluent: the index path walks declared message types, level by level. */
function confluentSelector(topLevel: readonly protobuf.Type[]): Selector {
  return (payload) => {
    const { indexes, message } = readConfluentMessageIndexes(payload);
    let candidates = topLevel;
    let type: protobuf.Type | undefined;
    for (const index of indexes) {
      type = candidates[index];
      if (type === undefined) throw new UndecodableError(`message indexes [${indexes.join(', ')}] name no message type of the schema`);
      candidates = messagesOf(type);
    }
    if (type === undefined) throw new UndecodableError('empty message index path');
    return { type, message };
  };
}

/** Glue: the index counts every message type of the file (map entries included) in full-name order. */
function glueSelector(topLevel: readonly protobuf.Type[]): Selector {
  const sorted = glueMessageOrder(topLevel);
  return (payload) => {
    const { index, message } = readGlueMessageIndex(payload);
    const entry = sorted[index];
    if (entry === undefined)
      throw new UndecodableError(`message index ${index} names no message type of the schema (${sorted.length} types)`);
    if (entry.type === undefined)
      throw new UndecodableError(`message index ${index} names the map entry type ${entry.name}, not a message`);
    return { type: entry.type, message };
  };
}

/** Every message type of the file by full name (no leading dot), sorted as Java sorts strings; map entries have no type. */
export function glueMessageOrder(topLevel: readonly protobuf.Type[]): Array<{ name: string; type?: protobuf.Type }> {
  const all: Array<{ name: string; type?: protobuf.Type }> = [];
  const queue = [...topLevel];
  for (let type = queue.shift(); type !== undefined; type = queue.shift()) {
    all.push({ name: fullName(type), type });
    for (const field of type.fieldsArray) {
      if (field instanceof protobuf.MapField) all.push({ name: `${fullName(type)}.${mapEntryName(field.name)}` });
    }
    queue.push(...messagesOf(type));
  }
  // UTF-16 code unit order, as Java's String.compareTo (not localeCompare).
  return all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The entry type name the Glue serializer's descriptor gives a map field: snake_case turned into
 * UpperCamel (Guava's LOWER_UNDERSCORE -> UPPER_CAMEL: each word capitalised, the rest lowercased),
 * other names only capitalised, then "Entry".
 */
export function mapEntryName(fieldName: string): string {
  const camel = fieldName.includes('_')
    ? fieldName
        .split('_')
        .map((w) => (w === '' ? '' : w[0]!.toUpperCase() + w.slice(1).toLowerCase()))
        .join('')
    : fieldName;
  return `${camel.charAt(0).toUpperCase()}${camel.slice(1)}Entry`;
}

/** Every message type under `namespace`, nested ones included (references' too: entry maps may live there). */
function allMessages(namespace: protobuf.NamespaceBase): protobuf.Type[] {
  return namespace.nestedArray.flatMap((n) =>
    n instanceof protobuf.Type ? [n, ...allMessages(n)] : n instanceof protobuf.Namespace ? allMessages(n) : [],
  );
}

function messagesOf(namespace: protobuf.NamespaceBase): protobuf.Type[] {
  return namespace.nestedArray.filter((n): n is protobuf.Type => n instanceof protobuf.Type);
}

function fullName(type: protobuf.Type): string {
  return type.fullName.replace(/^\./, '');
}

/** The well-known types protobufjs bundles, for imports no reference provides (registries leave them implied). */
function addWellKnownTypes(root: protobuf.Root, imports: Set<string>, provided: Set<string>): void {
  for (const name of imports) {
    if (provided.has(name)) continue;
    const json = protobuf.common.get(name);
    if (json?.nested === undefined) throw new Error(`imports ${JSON.stringify(name)}, which the registry gave no reference for`);
    root.addJSON(json.nested);
  }
}

/**
 * Turns the repeated entry messages of maps spelled out as messages (`option map_entry = true`) into
 * objects, as protobufjs does for `map<..>` fields. Schemas without such messages skip the walk.
 */
class EntryMaps {
  private readonly any: boolean;

  constructor(types: readonly protobuf.Type[]) {
    this.any = types.some(isMapEntry);
  }

  convert(type: protobuf.Type, value: Record<string, unknown>): Record<string, unknown> {
    if (!this.any) return value;
    const out: Record<string, unknown> = { ...value };
    for (const field of type.fieldsArray) {
      const nested = field.resolvedType;
      const v = out[field.name];
      if (!(nested instanceof protobuf.Type) || v === null || v === undefined) continue;
      const convert = (item: unknown) => this.convert(nested, item as Record<string, unknown>);
      if (isMapEntry(nested) && field.repeated && Array.isArray(v))
        out[field.name] = Object.fromEntries(v.map((e) => this.entry(nested, e)));
      else if (Array.isArray(v)) out[field.name] = v.map(convert);
      else if (field.map) out[field.name] = Object.fromEntries(Object.entries(v).map(([k, item]) => [k, convert(item)]));
      else out[field.name] = convert(v);
    }
    return out;
  }

  private entry(entryType: protobuf.Type, entry: Record<string, unknown>): [string, unknown] {
    const valueType = entryType.fields.value?.resolvedType;
    const value =
      valueType instanceof protobuf.Type && entry.value ? this.convert(valueType, entry.value as Record<string, unknown>) : entry.value;
    return [String(entry.key), value];
  }
}

function isMapEntry(type: protobuf.Type): boolean {
  return type.options?.map_entry === true;
}
