'use strict';
/* global process */
/**
 * Local serverless plugin (listed after serverless-esbuild in serverless.yml):
 *
 * - Starts every package (also inside `deploy` and `deploy function`) from an empty esbuild work
 *   folder. serverless-esbuild zips whatever that folder holds and does not clear it after
 *   `invoke local`, so files from an earlier local run (e.g. the local stage's streams config)
 *   would otherwise ship with the next deployment.
 * - Ends `sls invoke local` once the handler has answered. The functions keep their Kafka
 *   connections and SDK clients open between invocations on purpose (warm Lambda containers reuse
 *   them), so the process would wait on those sockets forever; Lambda freezes the container
 *   instead. The exit code is the invocation's (1 when the handler failed), after stdout is flushed.
 */
const { rmSync } = require('node:fs');
const path = require('node:path');

class ProjectPlugin {
  constructor(serverless) {
    // Resolved before serverless-esbuild points the service directory at its build folder for
    // `invoke local`, and kept.
    let workDir;
    const clearWorkDir = () => {
      if (workDir === undefined) {
        const serviceDir = serverless.serviceDir || serverless.config.servicePath;
        const esbuild = (serverless.service.custom && serverless.service.custom.esbuild) || {};
        workDir = path.join(serviceDir, esbuild.outputWorkFolder || '.esbuild');
      }
      rmSync(workDir, { recursive: true, force: true });
    };
    this.hooks = {
      'package:cleanup': clearWorkDir,
      'deploy:function:initialize': clearWorkDir,
      'before:invoke:local:loadEnvVars': clearWorkDir,
      'after:invoke:local:invoke': () => {
        clearWorkDir();
        const code = typeof process.exitCode === 'number' ? process.exitCode : 0;
        process.stdout.write('', () => process.exit(code));
      },
    };
  }
}

module.exports = ProjectPlugin;
