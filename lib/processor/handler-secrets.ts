/**
 * A stream's handler secrets (`handler.secrets`), resolved for `ctx.secrets`. Each invocation asks
 * the resolver again: its cache (one per container) spares the secret stores, and its expiry lets
 * a rotated secret reach the handler without a cold start.
 */
import type { SecretRef, StreamConfig } from '../config/schema';
import { SecretUnavailableError } from '../errors';
import { describeSecretRef, type SecretResolver } from '../kafka/secrets';

/** What a handler of a stream without secrets gets. */
const NO_SECRETS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * Resolves every secret of the stream's handler; throws SecretUnavailableError (one line naming the
 * stream, the secret and its reference) for the first that cannot be read.
 */
export async function resolveHandlerSecrets(stream: StreamConfig, resolve: SecretResolver): Promise<Readonly<Record<string, string>>> {
  const refs = Object.entries(stream.handler?.secrets ?? {});
  if (refs.length === 0) return NO_SECRETS;
  const values = await Promise.all(refs.map(async ([name, ref]) => [name, await resolveOne(stream.id, name, ref, resolve)] as const));
  return Object.freeze(Object.fromEntries(values));
}

async function resolveOne(streamId: string, name: string, ref: SecretRef, resolve: SecretResolver): Promise<string> {
  try {
    return await resolve(ref);
  } catch (err) {
    const reason = (err instanceof Error ? err.message : String(err)).replace(/\s*\n[\s\S]*$/, '');
    // The resolver's own messages name the reference; another source's may not.
    const where = reason.includes(referenceId(ref)) ? '' : ` (${describeSecretRef(ref)})`;
    throw new SecretUnavailableError(`stream ${streamId}: handler secret ${name}${where}: ${reason}`, { cause: err });
  }
}

function referenceId(ref: SecretRef): string {
  if ('env' in ref) return ref.env;
  if ('ssmParameter' in ref) return ref.ssmParameter;
  return ref.secretArn;
}
