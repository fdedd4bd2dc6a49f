/** What a Node socket error says about an endpoint that never answered, shared by the adapters that name it in one line. */

/** Socket error codes that mean nothing answered at the endpoint (after the client's own retries). */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
]);

/** The fields of a socket error that say where it tried. */
export type SocketErrorLike = { address?: unknown; port?: unknown; hostname?: unknown };

/** `address:port`, else the host name, else "its endpoint": where a refused or unresolved connection went. */
export function unreachableWhere(e: SocketErrorLike): string {
  if (typeof e.address === 'string') return `${e.address}${e.port === undefined ? '' : `:${String(e.port)}`}`;
  return typeof e.hostname === 'string' ? e.hostname : 'its endpoint';
}
