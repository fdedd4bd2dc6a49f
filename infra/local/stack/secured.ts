/**
 * The secured stack's credentials (`local:up --secured`): the SCRAM user its broker is formatted with,
 * and the environment lines that name its listeners, TLS files and that user.
 */
import { randomBytes } from 'node:crypto';
import type { ScramUser, SecuredListeners } from '../kafka';

/** The environment lines that name a secured stack's listeners, TLS files and SCRAM user (what `local:up --secured` prints). */
export function securedEnv(s: SecuredListeners): Record<string, string> {
  const user = s.scramUsers[0];
  return {
    KAFKA_SASL_SSL_BROKERS: s.saslSsl,
    KAFKA_SSL_BROKERS: s.ssl,
    KAFKA_TLS_DIR: s.tls.dir,
    ...(user ? { KAFKA_SCRAM_USERNAME: user.name, KAFKA_SCRAM_PASSWORD: user.password } : {}),
  };
}

/** The SCRAM user a secured stack is formatted with: a fresh password each time, kept only in the stack's own files. */
export function newScramUsers(): ScramUser[] {
  return [{ name: 'app', password: randomBytes(12).toString('base64url') }];
}
