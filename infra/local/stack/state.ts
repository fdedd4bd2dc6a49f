/**
 * The local stack's state file: what a started stack records (`StackState`: its endpoints, its
 * processes, its secured listeners), where the persistent stack lives (`PERSISTENT`) and reading it back.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SecuredListeners } from '../kafka';
import { LOCAL_DIR } from './dirs';

export type StackState = {
  kafkaBrokers: string;
  dynamodbEndpoint: string;
  /** Processes this stack started (services reused from env vars are not listed). */
  pids: number[];
  /** The Kafka node processes among `pids`, in node order (absent in states recorded before it was kept). */
  kafkaPids?: number[];
  /** The emulator process among `pids` (likewise). */
  dynamodbPids?: number[];
  /** Watchdogs that kill those processes if their owner dies (test runs only). */
  watchdogPids: number[];
  dir: string;
  /** The broker's secured listeners (`--secured`): SASL_SSL with SCRAM-SHA-512, and SSL with client certificates. */
  secured?: SecuredListeners;
};

const PERSISTENT_DIR = join(LOCAL_DIR, 'stack');

/** Where a persistent stack lives: its data dir and its state file. Tests pass a place of their own. */
export type PersistentPlace = { dir: string; stateFile: string; ownerPid?: number };
/** The persistent stack of `npm start` / `npm run local:up`. */
export const PERSISTENT: PersistentPlace = { dir: PERSISTENT_DIR, stateFile: join(PERSISTENT_DIR, 'state.json') };

/** The recorded state of a persistent stack, if any. */
export function readState(stateFile: string): StackState | undefined {
  if (!existsSync(stateFile)) return undefined;
  try {
    return JSON.parse(readFileSync(stateFile, 'utf8')) as StackState;
  } catch {
    return undefined;
  }
}
