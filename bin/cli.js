#!/usr/bin/env node
// The package bin `kafka-direct`: runs the TypeScript CLI (bin/cli.ts) through tsx's require hook,
// so the installed command and `npm run cli` execute the same sources without a build step.
require('tsx/cjs/api').register();
require('./cli.ts');
