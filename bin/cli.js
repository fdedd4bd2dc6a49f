#!/usr/bin/env node
/* global __dirname */
// The package bin `kafka-direct`. Installed, it runs the built JavaScript (dist/bin/cli.js, made by
// `npm run build` before packing); in a source checkout (tsconfig.json is not published) it runs the
// TypeScript sources through tsx, a devDependency, so `npm run cli` and the bin run the same code.
const { existsSync } = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
if (existsSync(path.join(root, 'tsconfig.json'))) {
  require('tsx/cjs/api').register();
  require('./cli.ts');
} else {
  require('../dist/bin/cli.js');
}
