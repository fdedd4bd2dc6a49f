/** Loads the deployment config from the environment a Lambda (or the local runtime) runs in. */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ValidationError } from '../errors';
import { parseDeploymentConfig, type DeploymentConfig } from './schema';

export { topicMatcher, topicSelector } from './topics';

/** Environment variables this module reads. */
export const CONFIG_ENV = { streams: 'STREAMS_CONFIG', ledgerTable: 'LEDGER_TABLE' } as const;

/**
 * Reads `STREAMS_CONFIG` (inline JSON starting with `{`, or the path of a JSON file, relative paths
 * from the working directory) and validates it; a non-empty `LEDGER_TABLE` replaces `ledgerTable`.
 * `origin.from` names where a file path came from instead (e.g. `--config`), for the error messages.
 */
export function loadDeploymentConfig(env: NodeJS.ProcessEnv = process.env, origin: { from?: string } = {}): DeploymentConfig {
  const setting = env[CONFIG_ENV.streams]?.trim();
  if (setting === undefined || setting === '') {
    throw new ValidationError(
      `${CONFIG_ENV.streams} is not set: set it to the deployment config as inline JSON (starting with "{") or to the path of a JSON file`,
    );
  }

  let text: string;
  let source: string;
  if (setting.startsWith('{')) {
    text = setting;
    source = CONFIG_ENV.streams;
  } else {
    source = setting;
    text = readConfigFile(setting, origin.from);
  }

  let input = parseJson(text, source);
  const ledgerTable = env[CONFIG_ENV.ledgerTable]?.trim();
  if (ledgerTable !== undefined && ledgerTable !== '' && isPlainObject(input)) {
    // The stack names the table, so the deployed value wins over whatever the file says.
    input = { ...input, ledgerTable };
  }
  const config = parseDeploymentConfig(input, source);
  // Handler files named by path are relative to the config file, wherever the process runs.
  return setting.startsWith('{') ? config : { ...config, configDir: dirname(resolve(setting)) };
}

function readConfigFile(path: string, from: string | undefined): string {
  try {
    // Some editors save a byte-order mark, which JSON.parse rejects.
    return readFileSync(path, 'utf8').replace(/^\uFEFF/, '');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (e as Error).message;
    const hint = from ? '' : `; ${CONFIG_ENV.streams} must be inline JSON starting with "{" or the path of a JSON file`;
    throw new ValidationError(`cannot read config file ${JSON.stringify(path)} (from ${from ?? CONFIG_ENV.streams}): ${reason}${hint}`, {
      cause: e,
    });
  }
}

/** JSON.parse, with a syntax error located by line and column (what an editor shows). */
export function parseJson(text: string, source: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    // V8's message has no position for most errors and quotes the text around it, which might be
    // sensitive, so the error is located (and described) by a scan of our own.
    const { position, reason } = locateJsonError(text);
    const before = text.slice(0, position);
    const line = before.split('\n').length;
    const column = position - before.lastIndexOf('\n');
    throw new ValidationError(`invalid JSON in ${source} at line ${line}, column ${column} (position ${position}): ${reason}`, {
      cause: e,
    });
  }
}

/** Offset and description of the first JSON syntax error in `text` (RFC 8259 grammar). */
export function locateJsonError(text: string): { position: number; reason: string } {
  let i = 0;
  class Stop {
    constructor(readonly reason: string) {}
  }
  const unexpected = (): Stop => new Stop(i >= text.length ? 'unexpected end of input' : `unexpected ${JSON.stringify(text[i])}`);
  const skipSpace = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] ?? '')) i++;
  };
  const expect = (ch: string) => {
    skipSpace();
    if (text[i] !== ch)
      throw new Stop(i >= text.length ? `unexpected end of input, expected "${ch}"` : `expected "${ch}", found ${JSON.stringify(text[i])}`);
    i++;
  };
  const string = () => {
    if (text[i] !== '"') throw unexpected();
    i++;
    for (;;) {
      const ch = text[i];
      if (ch === undefined) throw new Stop('unterminated string');
      if (ch === '"') return void i++;
      if (ch < ' ') throw new Stop('control character in string (escape it)');
      if (ch === '\\') {
        const escape = text[i + 1] ?? '';
        if ('"\\/bfnrt'.includes(escape) && escape !== '') i += 2;
        else if (escape === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
        else throw new Stop('invalid escape in string');
      } else i++;
    }
  };
  const value = (): void => {
    skipSpace();
    const ch = text[i];
    if (ch === '{') {
      i++;
      skipSpace();
      if (text[i] === '}') return void i++;
      for (;;) {
        skipSpace();
        if (text[i] !== '"')
          throw new Stop(i >= text.length ? 'unexpected end of input' : `expected a quoted key, found ${JSON.stringify(text[i])}`);
        string();
        expect(':');
        value();
        skipSpace();
        if (text[i] === ',') i++;
        else return expect('}');
      }
    }
    if (ch === '[') {
      i++;
      skipSpace();
      if (text[i] === ']') return void i++;
      for (;;) {
        value();
        skipSpace();
        if (text[i] === ',') i++;
        else return expect(']');
      }
    }
    if (ch === '"') return string();
    const token = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null/y;
    token.lastIndex = i;
    if (token.exec(text) === null) throw unexpected();
    i = token.lastIndex;
  };
  try {
    value();
    skipSpace();
    if (i < text.length) throw new Stop(`unexpected ${JSON.stringify(text[i])} after the end of the JSON value`);
    return { position: text.length, reason: 'no syntax error found' };
  } catch (stop) {
    if (stop instanceof Stop) return { position: i, reason: stop.reason };
    throw stop;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
