/** The functions' connection-reuse middleware: this container's connections, dropped after an idle spell, with a debug line. */
import type middy from '@middy/core';
import { dropContainerConnections } from './aws';
import { connectionIdleMaxMsFromEnv, dropConnectionsAfterIdle } from './connection-reuse';

/** `dropConnectionsAfterIdle` on this container's runtime, its limit from CONNECTION_IDLE_MAX_MS. */
export function freshConnections(logger: { debug(message: string, extra: Record<string, unknown>): void }): middy.MiddlewareObj {
  return dropConnectionsAfterIdle({
    idleMaxMs: connectionIdleMaxMsFromEnv(process.env),
    drop: dropContainerConnections,
    onDrop: (idleMs, sockets) => logger.debug('kept connections dropped after an idle spell', { idleMs, sockets }),
  });
}
