/**
 * Which stream an operation is about. Streams come from the deployment config; a replay stream
 * (`<source>-replay-<name>`, created by `replay`) is derived from its source's config, so status,
 * dead letters and dry-run plans work for replays too.
 */
import type { DeploymentConfig, StreamConfig } from '../config/schema';
import { ValidationError } from '../errors';
import { invalidReplayStreamIdMessage } from './messages';

const REPLAY_ID = /^(.+)-replay-([a-z0-9][a-z0-9_-]*)$/;
const STREAM_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** The replay stream id for a source stream and a replay name. */
export function replayStreamId(source: string, name: string): string {
  const id = `${source}-replay-${name}`;
  if (!STREAM_ID.test(id)) {
    throw new ValidationError(invalidReplayStreamIdMessage(id));
  }
  return id;
}

/** The config of a replay of `source`: same cluster, topics and handler, its own id (and optionally sink). */
export function replayStreamConfig(source: StreamConfig, id: string, sinkTable?: string): StreamConfig {
  const handler = source.handler && sinkTable !== undefined ? { ...source.handler, sinkTable } : source.handler;
  // A replay joins no consumer group: the group's offsets belong to the source stream. It is bounded,
  // so it runs in micro-batches even when its source is continuous (an open segment range has no end).
  return { ...source, id, handler, consumerGroup: undefined, continuous: undefined };
}

/** The stream `id` names (configured, or a replay of a configured one), or the only configured stream. */
export function resolveStream(config: DeploymentConfig, id: string | undefined): StreamConfig {
  const ids = config.streams.map((s) => s.id).join(', ');
  if (id === undefined) {
    if (config.streams.length === 1) return config.streams[0] as StreamConfig;
    throw new ValidationError(`name a stream: the config has several (${ids})`);
  }
  const s = config.streams.find((x) => x.id === id);
  if (s) return s;
  const m = REPLAY_ID.exec(id);
  const source = m && config.streams.find((x) => x.id === m[1]);
  if (source) return replayStreamConfig(source, id);
  throw new ValidationError(`unknown stream "${id}" (configured: ${ids}; replays are named <stream>-replay-<name>)`);
}
