/**
 * The TLS material of a secured local broker, made with openssl when the broker is first formatted
 * (never checked in): a private CA, the broker's certificate (SAN `IP:127.0.0.1` only, so a client
 * that dials `localhost` meets a hostname mismatch), a client certificate for mutual TLS, and, for
 * the failure tests, a second CA that signed nothing of this broker's and a client certificate that
 * has already expired. Keys are unencrypted PKCS#8 PEM, which Kafka's PEM key stores take.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PrerequisiteError } from '../../lib/errors';
import { requireCommand } from './process';

/** Files of the material, by what they are. */
export type TlsMaterial = {
  dir: string;
  caCert: string;
  /** The broker's key store: its key, then its certificate and the CA's (PEM). */
  brokerKeyStore: string;
  clientCert: string;
  clientKey: string;
  /** A CA that did not sign the broker's certificate. */
  otherCaCert: string;
  /** A client certificate of this CA whose validity ended when it was made. */
  expiredClientCert: string;
  expiredClientKey: string;
};

export function tlsFiles(dir: string): TlsMaterial {
  return {
    dir,
    caCert: join(dir, 'ca.pem'),
    brokerKeyStore: join(dir, 'broker-keystore.pem'),
    clientCert: join(dir, 'client.pem'),
    clientKey: join(dir, 'client.key'),
    otherCaCert: join(dir, 'other-ca.pem'),
    expiredClientCert: join(dir, 'expired-client.pem'),
    expiredClientKey: join(dir, 'expired-client.key'),
  };
}

/** The material in `dir`, made there unless a complete set already is (a restart keeps its certificates). */
export function ensureTlsMaterial(dir: string): TlsMaterial {
  const files = tlsFiles(dir);
  if (existsSync(join(dir, '.complete'))) return files;
  requireCommand('openssl', ['version'], 'install OpenSSL (Debian: apt-get install openssl) to make the secured broker its certificates');
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  makeMaterial(tmp);
  writeFileSync(join(tmp, '.complete'), '');
  // Renamed last: an interrupted run never leaves a set that looks complete.
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return files;
}

function makeMaterial(dir: string): void {
  const f = (name: string) => join(dir, name);
  selfSigned(f('ca.key'), f('ca.pem'), 'kafka-lambda-direct local CA');
  selfSigned(f('other-ca.key'), f('other-ca.pem'), 'an unrelated CA');
  signed(dir, 'broker', 'CN=127.0.0.1', { days: 3650, san: 'IP:127.0.0.1' });
  signed(dir, 'client', 'CN=app-client', { days: 3650 });
  signed(dir, 'expired-client', 'CN=expired-client', { days: 0 });
  // Kafka's PEM key store is one file: the private key, then the chain.
  const chain = [f('broker.key'), f('broker.pem'), f('ca.pem')].map((p) => readFileSync(p, 'utf8')).join('');
  writeFileSync(f('broker-keystore.pem'), chain, { mode: 0o600 });
  rmSync(f('broker.key'));
}

function selfSigned(key: string, cert: string, cn: string): void {
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '3650', '-subj', `/CN=${cn}`]);
}

/** A key and a certificate signed by the local CA; `days: 0` gives one that expires the second it is made. */
function signed(dir: string, name: string, subject: string, o: { days: number; san?: string }): void {
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, `${name}.key`), '-out', csr, '-subj', `/${subject}`]);
  writeFileSync(ext, o.san ? `subjectAltName=${o.san}\n` : 'extendedKeyUsage=clientAuth\n');
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    join(dir, 'ca.pem'),
    '-CAkey',
    join(dir, 'ca.key'),
    '-CAcreateserial',
    '-out',
    join(dir, `${name}.pem`),
    '-days',
    String(o.days),
    '-extfile',
    ext,
  ]);
  rmSync(csr);
  rmSync(ext);
}

function openssl(args: string[]): void {
  const run = spawnSync('openssl', args, { encoding: 'utf8', timeout: 30_000 });
  if (run.status !== 0) throw new PrerequisiteError(`openssl ${args[0]} failed: ${(run.stderr || run.stdout || String(run.error)).trim()}`);
}
