/** The sink tables a deployment config names: declared ones (created for it) and referenced ones (existing). */
import { ValidationError } from '../errors';
import type { DeploymentConfig, SinkTableKey } from './schema';

export type SinkTables = {
  /** Tables declared with a key schema, by name: the local runtime and the stack create them. */
  declared: Map<string, { key: SinkTableKey; streams: string[] }>;
  /** Tables named without a key schema: they must exist already. */
  referenced: Map<string, { streams: string[] }>;
};

/**
 * Every sink table of the config's streams. A table declared by two streams must have the same key;
 * a table declared by one stream and named plainly by another is declared (the plain name refers to it).
 */
export function sinkTablesOf(config: Pick<DeploymentConfig, 'streams' | 'ledgerTable'>): SinkTables {
  const declared: SinkTables['declared'] = new Map();
  const plain = new Map<string, string[]>();
  for (const stream of config.streams) {
    const h = stream.handler;
    if (!h?.sinkTable) continue;
    if (h.sinkTable === config.ledgerTable) {
      throw new ValidationError(`stream ${stream.id}: handler.sinkTable ${h.sinkTable} is the ledger table; give the sink its own table`);
    }
    if (!h.sinkTableKey) {
      plain.set(h.sinkTable, [...(plain.get(h.sinkTable) ?? []), stream.id]);
      continue;
    }
    const seen = declared.get(h.sinkTable);
    if (seen && JSON.stringify(seen.key) !== JSON.stringify(h.sinkTableKey)) {
      throw new ValidationError(
        `stream ${stream.id}: handler.sinkTable ${h.sinkTable} is declared with ` +
          `another key by stream ${seen.streams[0]}; declare one key per table`,
      );
    }
    declared.set(h.sinkTable, { key: h.sinkTableKey, streams: [...(seen?.streams ?? []), stream.id] });
  }
  const referenced: SinkTables['referenced'] = new Map();
  for (const [name, streams] of plain) {
    const d = declared.get(name);
    if (d) d.streams.push(...streams);
    else referenced.set(name, { streams });
  }
  return { declared, referenced };
}
