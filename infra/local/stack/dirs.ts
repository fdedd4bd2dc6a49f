/**
 * Where the local stack keeps its files: the project-local state dir and, under it, the cache of
 * jars and virtualenvs the services run from.
 */
import { join } from 'node:path';
import { LOCAL_ROOT } from '../../../lib/paths';

/** Project-local state: jar and virtualenv cache, persistent stack, per-run test stacks. */
export const LOCAL_DIR = LOCAL_ROOT;
export const CACHE_DIR = join(LOCAL_DIR, 'cache');
