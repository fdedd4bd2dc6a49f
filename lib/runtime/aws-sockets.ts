/**
 * The sockets the functions' AWS SDK clients (DynamoDB, Lambda, SQS, Secrets Manager, SSM) keep
 * between requests and between a warm container's invocations, and how long a request may wait on
 * one. The SDK's own default waits forever on a connection whose answers stopped; see
 * lib/connection-limits.ts for the limits and connection-reuse.ts for when kept sockets are dropped.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import { onSilentConnection, SERVICE_LIMITS, silentConnectionFound, type ConnectionLimits } from '../connection-limits';

/** What an AWS SDK client's HTTP handler is given: keep-alive agents this module can empty, and the limits. */
export type AwsRequestHandlerOptions = {
  httpAgent: HttpAgent;
  httpsAgent: HttpsAgent;
  connectionTimeout: number;
  /** Silence allowed while a request waits (the SDK's socket inactivity timeout; its error is retried). */
  socketTimeout: number;
};

/** Every agent made here, so `dropIdleSockets` reaches them all. */
const agents = new Set<HttpAgent>();
let shared: { httpAgent: HttpAgent; httpsAgent: HttpsAgent } | undefined;

/**
 * Request handler options for an AWS client. By default the process's shared agents (the SDK's own
 * sizing: 50 sockets per host); `maxSockets` / `idleSocketMs` give the client agents of its own;
 * `limits` replaces the functions' (the local emulator's longer waits).
 */
export function awsRequestHandler(
  opts: { maxSockets?: number; idleSocketMs?: number; limits?: ConnectionLimits } = {},
): AwsRequestHandlerOptions {
  const { connectMs, silentMs } = opts.limits ?? SERVICE_LIMITS;
  const limits = { connectionTimeout: connectMs, socketTimeout: silentMs };
  if (opts.maxSockets === undefined && opts.idleSocketMs === undefined) {
    shared ??= { httpAgent: kept(new HttpAgent(agentOptions(opts))), httpsAgent: kept(new HttpsAgent(agentOptions(opts))) };
    return { ...shared, ...limits };
  }
  return { httpAgent: kept(new HttpAgent(agentOptions(opts))), httpsAgent: kept(new HttpsAgent(agentOptions(opts))), ...limits };
}

// An http.Agent's `timeout` applies to its free sockets only: an idle one is destroyed, one in use is not.
const agentOptions = (opts: { maxSockets?: number; idleSocketMs?: number }) => ({
  keepAlive: true,
  maxSockets: opts.maxSockets ?? 50,
  ...(opts.idleSocketMs !== undefined && { timeout: opts.idleSocketMs }),
});

/**
 * Registers the agent, and makes a request's socket that goes silent (the SDK's socket timeout) say
 * so (connection-limits.ts: `silentConnectionFound`): every idle socket of the process is closed,
 * so the SDK's resend, and the next calls, connect afresh instead of meeting the next dead one.
 */
function kept<A extends HttpAgent>(agent: A): A {
  agents.add(agent);
  const create = agent.createConnection.bind(agent) as (...args: unknown[]) => Socket | undefined;
  (agent as { createConnection: unknown }).createConnection = (...args: unknown[]) => {
    const socket = create(...args);
    socket?.on('timeout', () => {
      if (!isFree(agent, socket)) silentConnectionFound();
    });
    return socket;
  };
  return agent;
}

const isFree = (agent: HttpAgent, socket: Socket): boolean => Object.values(agent.freeSockets).some((list) => list?.includes(socket));

function dropFreeSockets(agent: HttpAgent): number {
  let dropped = 0;
  for (const list of Object.values(agent.freeSockets)) {
    for (const socket of list ?? []) {
      socket.destroy();
      dropped++;
    }
  }
  return dropped;
}

onSilentConnection(() => void dropIdleSockets());

/** Destroys every kept-alive socket not serving a request; returns how many. Sockets in use are left alone. */
export function dropIdleSockets(): number {
  let dropped = 0;
  for (const agent of agents) dropped += dropFreeSockets(agent);
  return dropped;
}

/** Forgets an agent (its client was destroyed) and destroys its sockets. */
export function releaseAgents(options: Pick<AwsRequestHandlerOptions, 'httpAgent' | 'httpsAgent'>): void {
  for (const agent of [options.httpAgent, options.httpsAgent]) {
    if (agent === shared?.httpAgent || agent === shared?.httpsAgent) continue;
    agents.delete(agent);
    agent.destroy();
  }
}
