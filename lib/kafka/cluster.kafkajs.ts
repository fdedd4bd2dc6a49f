/**
 * A small typed wrapper around kafkajs 2.2.4's internal `Cluster` (kafkajs/src/cluster): broker
 * connections, metadata and per-broker requests without any consumer group. Internal API, so the
 * kafkajs version is pinned and checked here.
 *
 * Differences from a plain `Cluster`:
 * - Metadata responses are parsed leniently. kafkajs rejects a whole Metadata response when any one
 *   topic or partition in it carries an error code (UNKNOWN_TOPIC_OR_PARTITION for one missing name,
 *   LEADER_NOT_AVAILABLE or REPLICA_NOT_AVAILABLE for one sick partition anywhere in the cluster);
 *   here the response is returned as is, and callers decide per topic.
 * - Metadata requests never ask the broker to auto-create topics.
 * - Every request the cluster sends is reported to `onRequest` (kafkajs's `network.request`
 *   instrumentation event, emitted per response, plus `network.request_timeout`).
 */
import type { Kafka } from 'kafkajs';
import kafkajsPackage from 'kafkajs/package.json';
// @ts-expect-error -- kafkajs ships no types for its internals; the shapes used are typed below.
import protocolRequests from 'kafkajs/src/protocol/requests';
// @ts-expect-error -- kafkajs ships no types for its internals; the shapes used are typed below.
import protocolErrors from 'kafkajs/src/protocol/error';
// @ts-expect-error -- kafkajs ships no types for its internals; only `writeBuffer` is used.
import KafkajsEncoder from 'kafkajs/src/protocol/encoder';
import { connectionOf, refreshCredentials } from './client';
import { explainConnectionFailure, isCredentialRefusal } from './connection-failure';
import { KafkaError } from '../errors';
import { WHOLE_RESPONSES } from './framed-socket';
import { decodeFetchResponseV11, type DecodeOptions, type FetchResponse } from './protocol/fetch-response';
import { decodeMetadataResponse, encodeMetadataRequest, topicIdMetadataVersion } from './protocol/metadata-v12';

const SUPPORTED_KAFKAJS_VERSION = '2.2.4';

/** kafkajs's ISOLATION_LEVEL values (kafkajs/src/protocol/isolationLevel). */
export const ISOLATION_LEVEL = { read_uncommitted: 0, read_committed: 1 } as const;
/** ListOffsets special timestamps. */
export const EARLIEST_TIMESTAMP = -2;
export const LATEST_TIMESTAMP = -1;

const METADATA_API_KEY = 3;
const FETCH_API_KEY = 1;
/** The Fetch version the response decoder reads; kafkajs's newest, spoken by every broker since 2.3. */
const FETCH_VERSION = 11;

export type RawPartitionMetadata = {
  partitionErrorCode: number;
  partitionId: number;
  /** -1 when the partition has no leader. */
  leader: number;
  replicas: number[];
  isr: number[];
};
export type RawTopicMetadata = {
  topicErrorCode: number;
  topic: string;
  /** Absent in Metadata v0 only (brokers 4.x no longer speak v0). */
  isInternal?: boolean;
  partitionMetadata: RawPartitionMetadata[];
  /** The topic id (KIP-516), when the broker answered Metadata v10+ and the topic has one. */
  topicId?: string;
};
export type RawMetadata = {
  brokers: Array<{ nodeId: number; host: string; port: number; rack?: string | null }>;
  controllerId?: number;
  topicMetadata: RawTopicMetadata[];
  /** The Metadata version the broker answered; below 10 there are no topic ids. */
  metadataVersion?: number;
};

export type ListOffsetsTopic = { topic: string; partitions: Array<{ partition: number; timestamp: number }> };
export type ListOffsetsResult = Array<{
  topic: string;
  partitions: Array<{ partition: number; errorCode: number; timestamp: string; offset: string }>;
}>;

/** A protocol error as kafkajs builds it from an error code (KafkaJSProtocolError). */
export type ProtocolError = Error & { type: string; code: number; retriable: boolean };

type ProtocolRequest = {
  request: { apiKey: number; apiName: string; apiVersion: number };
  response: { decode(raw: Buffer): Promise<unknown>; parse(data: unknown): Promise<unknown> };
  requestTimeout?: number;
};

type InternalBroker = {
  nodeId?: number;
  /** ApiVersions of the broker, by api key (set once connected). */
  versions?: Record<number, { minVersion: number; maxVersion: number }> | null;
  fetch(args: Record<string, unknown>): Promise<KafkajsFetchResult>;
  connectionPool: { send(p: ProtocolRequest): Promise<unknown>; getConnection(index?: number): Promise<unknown> };
  lookupRequest(apiKey: number, definition: unknown): (args: Record<string, unknown>) => ProtocolRequest;
  metadata(topics?: string[]): Promise<RawMetadata>;
  listOffsets(args: { isolationLevel: number; topics: ListOffsetsTopic[] }): Promise<{ responses: ListOffsetsResult }>;
  /** Throws kafkajs's protocol error for the first partition that carries one. */
  offsetCommit(args: { groupId: string; groupGenerationId: number; memberId: string; topics: OffsetCommitTopic[] }): Promise<unknown>;
  /** OffsetFetch (v1-v4); throws kafkajs's protocol error for a group-level error or the first partition error. */
  offsetFetch(args: { groupId: string; topics: OffsetFetchTopic[] }): Promise<{ responses: OffsetFetchResult }>;
  disconnect(): Promise<void>;
};

export type OffsetCommitTopic = { topic: string; partitions: Array<{ partition: number; offset: string }> };
export type OffsetFetchTopic = { topic: string; partitions: Array<{ partition: number }> };
/** A group's committed offsets as OffsetFetch returns them: `offset` "-1" where the group has none. */
export type OffsetFetchResult = Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }>;

type InternalBrokerPool = {
  createBroker: (options: unknown) => InternalBroker;
  findBroker(args: { nodeId: number }): Promise<InternalBroker>;
  metadata: RawMetadata | null;
  refreshMetadata(topics: string[]): Promise<void>;
};

type InternalCluster = {
  brokerPool: InternalBrokerPool;
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  findBroker(args: { nodeId: number }): Promise<InternalBroker>;
  findGroupCoordinator(args: { groupId: string }): Promise<InternalBroker>;
};

type CreateCluster = (options: {
  metadataMaxAge?: number;
  allowAutoTopicCreation?: boolean;
  maxInFlightRequests?: number | null;
  instrumentationEmitter?: unknown;
  isolationLevel?: number;
}) => InternalCluster;

const { requests } = protocolRequests as { requests: { Metadata: unknown; Fetch: unknown } };
const { createErrorFromCode } = protocolErrors as { createErrorFromCode(code: number): ProtocolError };

/** The kafkajs error (type, message, retriable) for a protocol error code. */
export function protocolError(code: number): ProtocolError {
  return createErrorFromCode(code);
}

/**
 * The client's own cluster factory, so the Cluster gets exactly the `Kafka` instance's brokers,
 * SSL, SASL, timeouts, retry, logger and socket factory.
 */
function clusterFactory(kafka: Kafka): CreateCluster {
  if (kafkajsPackage.version !== SUPPORTED_KAFKAJS_VERSION) {
    throw new Error(
      `kafkajs ${kafkajsPackage.version} is installed; the internal Cluster wrapper is written for ${SUPPORTED_KAFKAJS_VERSION}`,
    );
  }
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  const factory = symbol && (kafka as unknown as Record<symbol, unknown>)[symbol];
  if (typeof factory !== 'function') {
    throw new Error('kafkajs Kafka instance has no internal cluster factory (unexpected kafkajs build)');
  }
  return factory as CreateCluster;
}

/** kafkajs's Fetch arguments for one partition (partition maxBytes set: kafkajs sends 0 otherwise). */
function fetchArgs(req: FetchPartitionRequest): Record<string, unknown> {
  return {
    isolationLevel: req.isolationLevel,
    maxWaitTime: req.maxWaitTimeMs,
    minBytes: req.minBytes,
    maxBytes: req.maxBytes,
    topics: [
      {
        topic: req.topic,
        partitions: [{ partition: req.partition, fetchOffset: String(req.fetchOffset), maxBytes: req.maxBytes }],
      },
    ],
  };
}

/** Sends a request with its own response handling, the way Broker's private sendRequest does. */
async function sendRaw(broker: InternalBroker, protocolRequest: ProtocolRequest): Promise<unknown> {
  try {
    return await broker.connectionPool.send(protocolRequest);
  } catch (e) {
    // A closed connection is dropped, to be reopened by the next request.
    if ((e as Error | undefined)?.name === 'KafkaJSConnectionClosedError') await broker.disconnect();
    throw e;
  }
}

/**
 * kafkajs's Connection.connect has no guard against concurrent calls: two requests racing on a
 * fresh connection open two sockets and the first one leaks (a process that then never exits).
 * Concurrent callers here share one connect per connection slot.
 */
function connectOncePerSlot(broker: InternalBroker): void {
  const pool = broker.connectionPool;
  const getConnection = pool.getConnection.bind(pool);
  const pending = new Map<number, Promise<unknown>>();
  pool.getConnection = (index = 0) => {
    let p = pending.get(index);
    if (!p) {
      p = getConnection(index).finally(() => pending.delete(index));
      pending.set(index, p);
    }
    return p;
  };
}

/** The parts of kafkajs's Connection (kafkajs/src/network/connection.js) `takeWholeResponses` uses. */
type InternalConnection = {
  socket?: { [WHOLE_RESPONSES]?: boolean } | null;
  authHandlers: unknown;
  requestQueue: { fulfillRequest(response: { size: number; correlationId: number; payload: Buffer }): void };
  processData(rawData: Buffer): void;
  [WHOLE_RESPONSES]?: true;
};

/** Every connection the broker hands out takes whole responses as they are (`takeWholeResponses`). */
function withWholeResponses(broker: InternalBroker): void {
  const pool = broker.connectionPool;
  const getConnection = pool.getConnection.bind(pool);
  pool.getConnection = async (index) => {
    const connection = await getConnection(index);
    takeWholeResponses(connection as InternalConnection);
    return connection;
  };
}

/**
 * When the connection's socket hands over whole responses (framed-socket.ts), passes each one to the
 * request it answers, as kafkajs's `processData` does but without first copying it into a new buffer
 * (kafkajs concatenates every response with the empty leftover of the one before). Responses during
 * authentication, and sockets of any other factory, go through kafkajs's own `processData`.
 */
function takeWholeResponses(connection: InternalConnection): void {
  if (connection[WHOLE_RESPONSES]) return;
  connection[WHOLE_RESPONSES] = true;
  const processData = connection.processData.bind(connection);
  connection.processData = (rawData) => {
    if (connection.authHandlers || !connection.socket?.[WHOLE_RESPONSES]) return processData(rawData);
    connection.requestQueue.fulfillRequest({
      size: rawData.readInt32BE(0),
      correlationId: rawData.readInt32BE(4),
      payload: rawData.subarray(8),
    });
  };
}

/** Metadata without kafkajs's all-or-nothing error check, and never auto-creating topics. */
function installLenientMetadata(pool: InternalBrokerPool, topicIds: boolean): void {
  const createBroker = pool.createBroker;
  pool.createBroker = (options) => {
    const broker = createBroker(options);
    connectOncePerSlot(broker);
    withWholeResponses(broker);
    broker.metadata = async (topics: string[] = []) => {
      const version = topicIds ? topicIdMetadataVersion(broker.versions?.[METADATA_API_KEY]) : undefined;
      if (version !== undefined) return metadataWithTopicIds(broker, version, topics);
      const build = broker.lookupRequest(METADATA_API_KEY, requests.Metadata);
      const { request, response } = build({ topics, allowAutoTopicCreation: false }) as ProtocolRequest;
      return (await sendRaw(broker, {
        request,
        response: { decode: response.decode, parse: async (data) => data },
      })) as RawMetadata;
    };
    return broker;
  };
}

/**
 * Metadata v10-v12 (topic ids), sent through the broker's connection like kafkajs's own requests.
 * kafkajs asks for every topic with an empty list (its v0 convention); v1+ means that by null.
 */
async function metadataWithTopicIds(broker: InternalBroker, version: number, topics: string[]): Promise<RawMetadata> {
  const body = encodeMetadataRequest(version, topics.length ? topics : null, false);
  const request = {
    apiKey: METADATA_API_KEY,
    apiName: 'Metadata',
    apiVersion: version,
    encode: async () => new KafkajsEncoder().writeBuffer(body),
  };
  return (await sendRaw(broker, {
    request,
    response: { decode: async (raw) => decodeMetadataResponse(version, raw), parse: async (data) => data },
  })) as RawMetadata;
}

/** kafkajs's own Fetch result: records flattened across batches, empty batches gone. */
export type KafkajsFetchResult = {
  responses: Array<{
    topicName: string;
    partitions: Array<{
      partition: number;
      highWatermark: string;
      lastStableOffset: string;
      messages: Array<{ offset: string; key: Buffer | null; value: Buffer | null; isControlRecord: boolean }>;
    }>;
  }>;
};

/** One partition to fetch, group-less (no session, no leader epoch fencing). */
export type FetchPartitionRequest = {
  topic: string;
  partition: number;
  fetchOffset: number;
  isolationLevel: number;
  /** Broker-side long poll: how long it may wait for `minBytes`. */
  maxWaitTimeMs: number;
  minBytes: number;
  /** Response and partition byte limit (kafkajs sends partition maxBytes 0 unless given). */
  maxBytes: number;
};

export type RequestEvent = { apiName: string; broker: string; timedOut: boolean };

export type KafkajsClusterOptions = {
  /** Called once per request sent (response received or timed out). */
  onRequest?: (event: RequestEvent) => void;
  /**
   * Ask for topic ids (Metadata v10+) where the broker speaks it (default true); false keeps
   * kafkajs's own Metadata v6, as against a broker before 2.8.
   */
  topicIds?: boolean;
};

export class KafkajsCluster {
  private readonly cluster: InternalCluster;
  private fetchedAt = 0;
  private serial: Promise<unknown> = Promise.resolve();
  /** A broker answered this client: its connections speak the listener's protocol (see `explained`). */
  private answered = false;

  constructor(
    private readonly kafka: Kafka,
    options: KafkajsClusterOptions = {},
  ) {
    const onRequest = options.onRequest;
    const answered = (): void => {
      this.answered = true;
    };
    // Duck-typed InstrumentationEventEmitter: the network layer only ever calls `emit`.
    const instrumentationEmitter = {
      emit(eventName: string, payload?: { apiName?: string; broker?: string }): void {
        if (eventName === 'network.request') answered();
        if (!onRequest) return;
        if (eventName === 'network.request' || eventName === 'network.request_timeout') {
          onRequest({
            apiName: payload?.apiName ?? 'unknown',
            broker: payload?.broker ?? 'unknown',
            timedOut: eventName === 'network.request_timeout',
          });
        }
      },
      addListener: () => () => undefined,
    };
    this.cluster = clusterFactory(kafka)({ allowAutoTopicCreation: false, instrumentationEmitter });
    installLenientMetadata(this.cluster.brokerPool, options.topicIds ?? true);
  }

  /**
   * One Metadata request for the given topics (`'all'`: every topic in the cluster), which also
   * refreshes the broker list and the leader cache. An empty list sends nothing.
   */
  async metadata(topics: string[] | 'all'): Promise<RawMetadata> {
    if (topics !== 'all' && topics.length === 0) return { brokers: [], topicMetadata: [] };
    // Serialized, so the snapshot read after a refresh is the one this call fetched.
    const run = this.serial.then(() =>
      this.authenticated(async () => {
        await this.cluster.connect();
        await this.cluster.brokerPool.refreshMetadata(topics === 'all' ? [] : topics);
        this.fetchedAt = Date.now();
        const metadata = this.cluster.brokerPool.metadata;
        if (!metadata) throw new Error('kafkajs metadata missing right after a refresh');
        return metadata;
      }),
    );
    this.serial = run.catch(() => undefined);
    return run;
  }

  /** The last metadata fetched (by this wrapper or by kafkajs internally) and when this wrapper fetched it. */
  cachedMetadata(): { metadata: RawMetadata | null; fetchedAt: number } {
    return { metadata: this.cluster.brokerPool.metadata, fetchedAt: this.fetchedAt };
  }

  /** One ListOffsets request to broker `nodeId`. Throws kafkajs's error for the first partition error. */
  async listOffsets(nodeId: number, isolationLevel: number, topics: ListOffsetsTopic[]): Promise<ListOffsetsResult> {
    return this.authenticated(async () => {
      await this.cluster.connect();
      const broker = await this.cluster.findBroker({ nodeId });
      const { responses } = await broker.listOffsets({ isolationLevel, topics });
      return responses;
    });
  }

  /**
   * One Fetch v11 request to broker `nodeId` for one partition. The response is decoded batch by
   * batch (see protocol/fetch-response.ts); partition errors are returned, not thrown.
   */
  async fetch(nodeId: number, req: FetchPartitionRequest, options: DecodeOptions = {}): Promise<FetchResponse> {
    return this.authenticated(() => this.fetchOnce(nodeId, req, options));
  }

  private async fetchOnce(nodeId: number, req: FetchPartitionRequest, options: DecodeOptions): Promise<FetchResponse> {
    await this.cluster.connect();
    // The pool's lookup, not Cluster.findBroker: on a miss that one refreshes metadata for every topic.
    const broker = await this.cluster.brokerPool.findBroker({ nodeId });
    const build = broker.lookupRequest(FETCH_API_KEY, requests.Fetch);
    const built = build({ replicaId: -1, ...fetchArgs(req) }) as ProtocolRequest;
    if (built.request.apiVersion !== FETCH_VERSION) {
      throw new Error(`broker ${nodeId} negotiated Fetch v${built.request.apiVersion}; the reader needs v${FETCH_VERSION} (Kafka >= 2.3)`);
    }
    return (await sendRaw(broker, {
      request: built.request,
      response: { decode: (raw) => decodeFetchResponseV11(raw, options), parse: async (data) => data },
      requestTimeout: built.requestTimeout,
    })) as FetchResponse;
  }

  /**
   * The same Fetch through kafkajs's own `Broker.fetch` and decoder (records flattened, empty batches
   * dropped, partition errors thrown): a reference to compare the batch decoder with.
   */
  async fetchWithKafkajsDecoder(nodeId: number, req: FetchPartitionRequest): Promise<KafkajsFetchResult> {
    await this.cluster.connect();
    const broker = await this.cluster.brokerPool.findBroker({ nodeId });
    return broker.fetch(fetchArgs(req));
  }

  /** One OffsetCommit to the group's coordinator, for a group without members (generation -1, no member id). */
  async commitOffsets(groupId: string, topics: OffsetCommitTopic[]): Promise<void> {
    await this.authenticated(async () => {
      await this.cluster.connect();
      const coordinator = await this.cluster.findGroupCoordinator({ groupId });
      await coordinator.offsetCommit({ groupId, groupGenerationId: -1, memberId: '', topics });
    });
  }

  /**
   * One OffsetFetch to the group's coordinator: the group's committed offsets of the given
   * partitions, as kafkajs's `admin.fetchOffsets` reads them (without its Metadata request per topic:
   * the caller names the partitions). Nothing joins the group.
   */
  async fetchCommittedOffsets(groupId: string, topics: OffsetFetchTopic[]): Promise<OffsetFetchResult> {
    return this.authenticated(async () => {
      await this.cluster.connect();
      const coordinator = await this.cluster.findGroupCoordinator({ groupId });
      const { responses } = await coordinator.offsetFetch({ groupId, topics });
      return responses;
    });
  }

  /**
   * Runs `op`; when the broker refused the client's credentials (SASL authentication, or a client
   * certificate rejected in the TLS handshake) and reading them again past the cache found new ones
   * (a rotated secret), runs it once more on new connections. Otherwise the refusal stands.
   */
  private async authenticated<T>(op: () => Promise<T>): Promise<T> {
    try {
      try {
        return await op();
      } catch (err) {
        if (!isCredentialRefusal(err) || !(await refreshCredentials(this.kafka))) throw err;
        await this.cluster.disconnect();
        return await op();
      }
    } catch (err) {
      throw this.explained(err);
    }
  }

  /**
   * A refused connection as one line naming the broker, the way in and the setting to check; anything
   * else as it is. Once a broker has answered, a reset or a close is a connection lost (a restart, a
   * fault on the way), retried, not TLS spoken to the wrong listener.
   */
  private explained(err: unknown): unknown {
    const connection = connectionOf(this.kafka);
    const refusal = connection && explainConnectionFailure(err, connection, Date.now(), { established: this.answered });
    return refusal ? new KafkaError(refusal.message, { cause: err, type: refusal.kind, retriable: false }) : err;
  }

  async disconnect(): Promise<void> {
    await this.cluster.disconnect();
    this.fetchedAt = 0;
  }
}
