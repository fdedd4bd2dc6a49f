/**
 * The deployment config as JSON Schema (draft 2020-12), from the same zod schema the functions
 * parse with, so an editor completes and checks a `streams.json` that names it in `"$schema"`. The
 * schema describes the input (defaults optional); cross-field rules are checked by the parser only.
 */
import { z } from 'zod';
import { deploymentConfigSchema } from './schema';

/** The JSON Schema of a deployment config file (`streams.schema.json` in the package). */
export function deploymentConfigJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(deploymentConfigSchema, { io: 'input', unrepresentable: 'any' }),
    title: 'kafka-lambda-direct streams config',
  };
}
