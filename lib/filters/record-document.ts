/**
 * What a filter pattern sees of a Kafka record: `value`, `key` and `headers`. Lambda decodes a
 * Kafka value as UTF-8 and filters it as JSON when it parses, else as a plain string; so do we,
 * unless the stream decoded it (a `value` / `key` format), in which case the decoded value is used.
 */
import type { HandlerRecord } from '../processor/handler-api';
import type { FilterDocument } from './match';
import type { FilterField } from './pattern';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The document for `fields` (only those are decoded). A null key or value (a keyless record, a
 * tombstone) or one that is not UTF-8 text is absent: only `{"exists": false}` matches it there.
 */
export function filterDocument(record: HandlerRecord, fields: ReadonlySet<FilterField>): FilterDocument {
  const doc: FilterDocument = {};
  if (fields.has('value')) setIfPresent(doc, 'value', record.decoded?.value !== undefined ? record.decoded.value : fromBytes(record.value));
  if (fields.has('key')) setIfPresent(doc, 'key', record.decoded?.key !== undefined ? record.decoded.key : fromBytes(record.key));
  if (fields.has('headers')) doc.headers = headersOf(record);
  return doc;
}

function setIfPresent(doc: FilterDocument, field: FilterField, value: unknown): void {
  if (value !== undefined) doc[field] = value;
}

/** JSON when the UTF-8 text parses as JSON, else the text itself; undefined for null or non-UTF-8 bytes. */
export function fromBytes(bytes: Buffer | null): unknown {
  const text = utf8Text(bytes);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * Header name -> its values as UTF-8 text, in write order (a repeated name has several, matched if
 * any matches; a null value is JSON null; one that is not UTF-8 is left out). Lambda's Kafka event
 * has the same paths (`headers.<name>`), there as lists of byte values.
 */
function headersOf(record: HandlerRecord): Record<string, Array<string | null>> {
  const out: Record<string, Array<string | null>> = Object.create(null) as Record<string, Array<string | null>>;
  for (const h of record.headers) {
    const text = h.value === null ? null : utf8Text(h.value);
    if (text !== undefined) (out[h.key] ??= []).push(text);
  }
  return out;
}

function utf8Text(bytes: Buffer | null): string | undefined {
  if (bytes === null) return undefined;
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}
