/**
 * When a warm container may reuse the connections it kept. Lambda freezes a container between
 * invocations; a NAT gateway, a load balancer or a firewall forgets a connection idle past its own
 * timeout without telling either side (AWS's NAT gateway and Network Load Balancer after 350 s, an
 * Application Load Balancer after 60 s, others sooner), so after a long freeze a kept connection may
 * be dead and only a timeout would say so. An invocation that starts more than `idleMaxMs` after
 * the previous one ended drops what the container kept (Kafka connections, idle AWS sockets) and
 * connects again: a few tens of milliseconds, paid only by invocations that were idle anyway.
 * Invocations closer together keep their connections (a busy stream's processors, the planner's
 * chained ticks up to 10 s apart).
 */
import type middy from '@middy/core';
import { ValidationError } from '../errors';

/** The environment variable that sets `idleMaxMs` for the functions. */
export const CONNECTION_IDLE_MAX_MS_ENV = 'CONNECTION_IDLE_MAX_MS';
export const DEFAULT_CONNECTION_IDLE_MAX_MS = 10_000;

/** `CONNECTION_IDLE_MAX_MS` (default 10,000); a value that is not a whole number of ms is refused, naming it. */
export function connectionIdleMaxMsFromEnv(env: NodeJS.ProcessEnv): number {
  const raw = env[CONNECTION_IDLE_MAX_MS_ENV];
  if (raw === undefined || raw === '') return DEFAULT_CONNECTION_IDLE_MAX_MS;
  const ms = Number(raw);
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw new ValidationError(
      `${CONNECTION_IDLE_MAX_MS_ENV} must be a whole number of milliseconds (0 or more), not ${JSON.stringify(raw)}`,
    );
  }
  return ms;
}

export type ConnectionReuseOptions = {
  idleMaxMs: number;
  /** Drops the kept connections; returns how many sockets it closed (for the log). */
  drop(): number;
  now?: () => number;
  /** Told when connections were dropped: how long the container was idle, and how many sockets went. */
  onDrop?(idleMs: number, sockets: number): void;
};

/** The rule, apart from middy: `before` an invocation (true when it dropped), `after` it, whatever its outcome. */
export function connectionReuse(o: ConnectionReuseOptions): { before(): boolean; after(): void } {
  const now = o.now ?? Date.now;
  let lastEndedAtMs: number | undefined;
  return {
    before() {
      const idleMs = lastEndedAtMs === undefined ? 0 : now() - lastEndedAtMs;
      if (lastEndedAtMs === undefined || idleMs <= o.idleMaxMs) return false;
      const sockets = o.drop();
      o.onDrop?.(idleMs, sockets);
      return true;
    },
    after() {
      lastEndedAtMs = now();
    },
  };
}

/** The middy middleware of `connectionReuse`. */
export function dropConnectionsAfterIdle(o: ConnectionReuseOptions): middy.MiddlewareObj {
  const rule = connectionReuse(o);
  const after = async (): Promise<void> => rule.after();
  return {
    before: async () => {
      rule.before();
    },
    after,
    onError: after,
  };
}
