/**
 * PEM checks for TLS settings: the config's certificates when it is loaded, a client key when it is
 * read from its secret (it never is in the config). Node's own X.509 and key parsers decide; the
 * messages never quote key material.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Why `pem` is not PEM certificate text (one or more certificates), or undefined when it is. */
export function pemCertificateProblem(pem: string): string | undefined {
  const blocks = pem.match(CERTIFICATE_BLOCK) ?? [];
  if (blocks.length === 0) return 'must be PEM text ("-----BEGIN CERTIFICATE-----..."), not a file path';
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (e) {
      return `certificate ${i + 1} of ${blocks.length} does not parse (${(e as Error).message})`;
    }
  }
  return undefined;
}

/** The private key of a PEM text, or why it is not one (never quoting it). */
export function parsePrivateKey(pem: string, passphrase?: string): { key: KeyObject } | { problem: string } {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) return { problem: 'is not a PEM private key ("-----BEGIN PRIVATE KEY-----...")' };
  try {
    return { key: createPrivateKey({ key: pem, format: 'pem', ...(passphrase !== undefined ? { passphrase } : {}) }) };
  } catch (e) {
    const encrypted = /ENCRYPTED/.test(pem);
    const why = encrypted && passphrase === undefined ? 'it is encrypted and no passphrase is set' : (e as Error).message;
    return { problem: `cannot be read as a private key (${why})` };
  }
}

/** When the first certificate of `certPem` stops being valid (epoch ms), or undefined without one. */
export function certificateValidToMs(certPem: string | undefined): number | undefined {
  const first = certPem?.match(CERTIFICATE_BLOCK)?.[0];
  return first === undefined ? undefined : Date.parse(new X509Certificate(first).validTo);
}

/** Whether the first certificate of `certPem` belongs to `key`. */
export function certificateMatchesKey(certPem: string, key: KeyObject): boolean {
  const first = certPem.match(CERTIFICATE_BLOCK)?.[0];
  return first !== undefined && new X509Certificate(first).checkPrivateKey(key);
}
