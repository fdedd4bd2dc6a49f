'use strict';
/* global __dirname, __filename, process, Buffer */
/**
 * Variable source for serverless.yml: `${file(./infra/cfn/stack.js):<name>}`. Each export resolves
 * the stage's params, loads and validates the streams config with the project's own parser (the
 * same code the functions run), and returns a piece of configuration or CloudFormation built by
 * ./builders.ts. A config that does not parse, or does not fit the stage, fails `sls package`
 * with the validator's message instead of failing in Lambda later.
 *
 * Works with osls (Serverless Framework v3) and Serverless Framework v4: both call an exported
 * function with `{ resolveVariable }`.
 */
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * The project's TypeScript: the builders next to this file and the streams config parser the
 * functions run, so the deploy-time check is the runtime's own. A source checkout (tsconfig.json is
 * not published) loads the sources with tsx, a devDependency; an installed package its built dist/.
 */
const requireTs = (file) => {
  const source = path.resolve(__dirname, file);
  if (require('node:fs').existsSync(path.join(ROOT, 'tsconfig.json'))) return require('tsx/cjs/api').require(source, __filename);
  return require(path.join(ROOT, 'dist', path.relative(ROOT, source)).replace(/\.ts$/, '.js'));
};
const builders = requireTs('./builders.ts');

/** Params read from serverless.yml (see its `params.default` for meanings and defaults). */
const PARAM_NAMES = [
  'scheduleRate',
  'scheduleMethod',
  'scheduleEnabled',
  'scheduleMaximumRetryAttempts',
  'tickChainFromMs',
  'streamsConfig',
  'plannerTimeout',
  'processorTimeout',
  'processorMaximumEventAge',
  'processorReservedConcurrency',
  'segmentMemorySize',
  'segmentReservedConcurrency',
  'mskClusterArns',
  'kafkaSecretArns',
  'kafkaSecretsKmsKeyArn',
  'tableKmsKeyArn',
  'functionKmsKeyArn',
  'logsKmsKey',
  'vpcSubnetIds',
  'vpcSecurityGroupIds',
  'auditLogTable',
  'tableDeletionProtection',
  'tableDeletionPolicy',
  'metricsNamespace',
  'lagAlarmThreshold',
  'lagAlarmMinutes',
  'alarmEmail',
  'bundleAwsSdk',
];

/** The last resolution: every `${file(...)}` of this file in one serverless run shares it. */
let shared;

async function resolveContext(resolveVariable) {
  const raw = {
    service: await resolveVariable('self:service'),
    stage: await resolveVariable('sls:stage'),
  };
  for (const name of PARAM_NAMES) raw[name] = await resolveVariable(`param:${name}`);
  const key = JSON.stringify(raw);
  if (!shared || shared.key !== key) shared = { key, value: check(raw) };
  return shared.value;
}

async function check(raw) {
  const settings = builders.parseSettings(raw);
  const config = loadStreamsConfig(settings, String(raw.streamsConfig));
  // The local stage runs against the config's own ledger (the CLI and `npm start` on the same file
  // use it); only deployed stages name the table after the stack.
  if (settings.stage === 'local') settings.names.ledgerTable = config.ledgerTable;
  await builders.checkConfig(settings, config);
  return { settings, config, streamsConfig: String(raw.streamsConfig) };
}

/** Lambda allows 4 KB of environment in all; a config inlined into STREAMS_CONFIG must leave room for the rest. */
const MAX_INLINE_CONFIG_BYTES = 3000;

/** A config file outside the service directory cannot be packaged as a file: it goes inline into STREAMS_CONFIG. */
function outsideServiceDir(setting) {
  const trimmed = setting.trim();
  return !trimmed.startsWith('{') && path.relative(ROOT, path.resolve(ROOT, trimmed)).startsWith('..');
}

function inlineConfig(setting) {
  const file = path.resolve(ROOT, setting.trim());
  const text = JSON.stringify(
    JSON.parse(
      require('node:fs')
        .readFileSync(file, 'utf8')
        .replace(/^\uFEFF/, ''),
    ),
  );
  if (Buffer.byteLength(text) > MAX_INLINE_CONFIG_BYTES) {
    throw new builders.DeployConfigError(
      `param streamsConfig: ${setting} is outside the service directory and too large (${Buffer.byteLength(text)} ` +
        `bytes) to pass inline in STREAMS_CONFIG (at most ${MAX_INLINE_CONFIG_BYTES}: Lambda allows 4 KB of ` +
        `environment in all); shorten it (a CA bundle can move to a secret), or from a clone put it under ${ROOT}`,
    );
  }
  return text;
}

/** The streams config exactly as the functions will load it (STREAMS_CONFIG, with LEDGER_TABLE set outside the local stage). */
function loadStreamsConfig(settings, streamsConfig) {
  const setting = streamsConfig.trim();
  const inline = setting.startsWith('{');
  const file = inline ? undefined : path.resolve(ROOT, setting);
  const { loadDeploymentConfig } = requireTs('../../lib/config/load.ts');
  try {
    const env = { STREAMS_CONFIG: inline ? setting : file };
    if (settings.stage !== 'local') env.LEDGER_TABLE = settings.names.ledgerTable;
    const config = loadDeploymentConfig(env);
    if (!inline && settings.stage !== 'local' && outsideServiceDir(setting)) inlineConfig(setting);
    return config;
  } catch (err) {
    if (err instanceof builders.DeployConfigError) throw err;
    const hint =
      settings.stage === 'local' && !inline
        ? ' (for the local stack, run: npx tsx infra/serverless/local-invoke-setup.ts, or set STREAMS_CONFIG)'
        : '';
    throw new builders.DeployConfigError(
      `streams config for stage ${settings.stage} (${inline ? 'inline JSON' : setting}): ${err.message}${hint}`,
    );
  }
}

/**
 * A config error ends the run here with its one line. serverless would report the rejection once
 * per variable of this file (a dozen in serverless.yml, the same text each time), in several
 * resolution passes, and loses it when a later pass finds a placeholder instead; other errors
 * (serverless's own) are left to serverless.
 */
function exitWith(err) {
  process.stderr.write(`Error: ${err.message}\n`);
  process.exit(1);
}

const withContext =
  (build) =>
  async ({ resolveVariable }) => {
    let context;
    try {
      context = await resolveContext(resolveVariable);
    } catch (err) {
      if (err instanceof builders.DeployConfigError) exitWith(err);
      throw err;
    }
    return build(context);
  };

module.exports = {
  /** Resource names (tables, functions) derived from service and stage. */
  names: withContext(({ settings }) => settings.names),
  /** The functions' metrics namespace (the param, or lib/runtime/metrics-namespace.ts's default). */
  metricsNamespace: withContext(({ settings }) => settings.metricsNamespace),
  /** Per-function IAM roles (Resources). */
  iamRoles: withContext(({ settings, config }) => builders.iamRoles(settings, config)),
  /** The ledger table, from lib/ledger/table.ts (Resources, Outputs). */
  ledgerTable: withContext(({ settings }) => builders.ledgerTableResources(settings)),
  /** The sink tables the streams declare (Resources, Outputs). */
  sinkTables: withContext(({ settings, config }) => builders.sinkTableResources(settings, config)),
  /** Schedule role / DLQ policy (Resources) and the schedule target's retry and DLQ settings (extensions). */
  schedule: withContext(({ settings }) => builders.schedule(settings)),
  /** The alarm topic's customer managed KMS key (usable by the stack's alarms), its alias and the topic policy (Resources). */
  alarmTopicEncryption: withContext(({ settings }) => builders.alarmTopicEncryption(settings)),
  /** The log groups' customer managed key when logsKmsKey is set (Resources: the stack's key; extensions: KmsKeyId). */
  logGroupEncryption: withContext(({ settings, config }) => builders.logGroupEncryption(settings, config)),
  /** The security scan's kept findings with their reasons, as checkov skip Metadata (extensions). */
  scanSkips: withContext(({ settings, config }) => builders.scanSkipMetadata(settings, config)),
  /** Functions' environment key (functionKmsKeyArn), or null (via the `, null` fallback): Lambda's AWS managed key. */
  functionKmsKeyArn: withContext(({ settings }) => settings.functionKmsKeyArn ?? null),
  /** Alarms and dashboard (Resources). */
  observability: withContext(({ settings, config }) => builders.observability(settings, config)),
  /** Function `vpc` setting, or null (via the `, null` fallback in serverless.yml) without a VPC. */
  vpc: withContext(({ settings }) => builders.vpc(settings)),
  /** SSESpecification of the tables. */
  tableSse: withContext(({ settings }) => builders.tableSse(settings)),
  /** Processor ReservedConcurrentExecutions, or AWS::NoValue (unreserved). */
  processorReservedConcurrency: withContext(({ settings }) => builders.reservedConcurrency(settings)),
  /**
   * The segments function (continuous streams' resident segments) when a stream is continuous, or null
   * (via the `, null` fallback; serverless drops a function set to null): the stack is then as without it.
   */
  segmentsFunction: withContext(({ settings, config }) => builders.segmentsFunction(settings, config)),
  /**
   * Planner-only environment: PROCESSOR_FUNCTION_NAME, SEGMENT_FUNCTION_NAME with a continuous stream,
   * and PROCESSOR_RESERVED_CONCURRENCY when processorReservedConcurrency is set.
   */
  plannerEnvironment: withContext(({ settings, config }) => builders.plannerEnvironment(settings, config)),
  /** The tick chain's queue and event source mapping, when a stream is ticked by it (Resources, Outputs). */
  tickChain: withContext(({ settings, config }) => builders.tickChain(settings, config)),
  /** Processor-only environment: AUDIT_LOG_TABLE when the auditLogTable param is set, and the streams' handler.environment. */
  processorEnvironment: withContext(({ settings, config }) => builders.processorEnvironment(settings, config)),
  /** serverless-esbuild `exclude` list. */
  esbuildExclude: withContext(({ settings }) => builders.esbuildExclude(settings)),
  /** The user handler modules the streams name by path, for the esbuild plugin: `[{ stream, module, file }]`. */
  handlerModules: withContext(({ config }) => builders.handlerModules(config)),
  /** Files to package with the functions: the streams config file (none for inline JSON or a file outside the service directory). */
  packagePatterns: withContext(({ streamsConfig }) => {
    const setting = streamsConfig.trim();
    if (setting.startsWith('{') || outsideServiceDir(setting)) return [];
    return [path.relative(ROOT, path.resolve(ROOT, setting)).split(path.sep).join('/')];
  }),
  /**
   * STREAMS_CONFIG for the functions: the path relative to the package root (Lambda's working
   * directory), inline JSON, or the content of a file outside the service directory as inline JSON
   * (handler modules are bundled, so the functions need no path relative to it).
   */
  streamsConfigEnv: withContext(({ settings, streamsConfig }) => {
    const setting = streamsConfig.trim();
    if (setting.startsWith('{')) return setting;
    if (outsideServiceDir(setting)) return settings.stage === 'local' ? path.resolve(ROOT, setting) : inlineConfig(setting);
    if (path.isAbsolute(setting)) return setting;
    return path.relative(ROOT, path.resolve(ROOT, setting)).split(path.sep).join('/');
  }),
};
