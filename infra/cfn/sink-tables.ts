/**
 * The sink tables a stage's streams declare (`handler.sinkTable: { name, key }`), as stack
 * resources: on-demand, point-in-time recoverable, encrypted like the ledger, with the stage's
 * deletion settings. A sink named by a plain string is an existing table the stack only grants.
 */
import type { DeploymentConfig } from '../../lib/config/schema';
import { sinkTablesOf } from '../../lib/config/sink-tables';
import { AppError } from '../../lib/errors';
import { sinkTableDefinition } from '../../lib/sink/table.dynamodb';
import type { CfnResources } from './cfn';
import { tableResource } from './table-resource';
import { IDS } from './names';
import { DeployConfigError, type Settings } from './settings';

/**
 * Logical ID of each declared sink table, by table name: the name without the stack's
 * `<service>-<stage>-` prefix in PascalCase, plus `Table` (`kafka-lambda-direct-dev-running-totals`
 * -> `RunningTotalsTable`, the ID the example sink always had, so updating a stack keeps the table).
 */
export function sinkTableLogicalIds(s: Settings, config: DeploymentConfig): Map<string, string> {
  const prefix = `${s.service}-${s.stage}-`;
  const used = new Set<string>(Object.values(IDS));
  const out = new Map<string, string>();
  for (const name of [...declaredSinks(config).keys()].sort()) {
    const base = `${(name.startsWith(prefix) ? name.slice(prefix.length) : name)
      .split(/[^A-Za-z0-9]+/)
      .filter(Boolean)
      .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
      .join('')}Table`;
    let id = base;
    for (let n = 2; used.has(id); n++) id = `${base}${n}`;
    used.add(id);
    out.set(name, id);
  }
  return out;
}

function declaredSinks(config: DeploymentConfig) {
  try {
    return sinkTablesOf(config).declared;
  } catch (err) {
    if (err instanceof AppError) throw new DeployConfigError(err.message, { cause: err });
    throw err;
  }
}

/** The declared sink tables (Resources) and their names (Outputs `<LogicalId>Name`). */
export function sinkTableResources(s: Settings, config: DeploymentConfig): { Resources: CfnResources; Outputs: Record<string, unknown> } {
  const ids = sinkTableLogicalIds(s, config);
  const Resources: CfnResources = {};
  const Outputs: Record<string, unknown> = {};
  for (const [name, { key, streams }] of declaredSinks(config)) {
    const id = ids.get(name) as string;
    const def = sinkTableDefinition(name, key);
    Resources[id] = tableResource(s, def, { tags: [{ Key: 'streams', Value: streams.join(' ') }] });
    Outputs[`${id}Name`] = { Value: { Ref: id } };
  }
  return { Resources, Outputs };
}
