/**
 * `npm run test:handler -- <file.test.ts>...`: runs the tests of your own handlers, wherever they
 * are (a directory outside the repository too), with the project's TypeScript transform, and
 * `kafka-lambda-direct/testing` (the handler test kit, lib/testing) and `kafka-lambda-direct` (the
 * handler types, lib/processor/handler-api.ts) importable by those names.
 */
/* global __dirname, process */
const path = require('node:path');

const ROOT = __dirname;
const files = process.argv.filter((a) => /\.test\.[cm]?[jt]s$/.test(a)).map((f) => path.resolve(f));

module.exports = {
  rootDir: ROOT,
  roots: files.length ? [...new Set(files.map((f) => path.dirname(f)))] : [ROOT],
  testMatch: files.length ? files : ['<rootDir>/handlers/**/*.test.[jt]s'],
  testEnvironment: 'node',
  transform: {
    '^.+\\.(t|j)s$': ['@swc/jest', { jsc: { target: 'es2023', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }],
  },
  moduleNameMapper: {
    '^kafka-lambda-direct/testing$': '<rootDir>/lib/testing/index.ts',
    '^kafka-lambda-direct$': '<rootDir>/lib/processor/handler-api.ts',
  },
  // A handler outside the repository imports the project's dependencies (e.g. @aws-sdk/lib-dynamodb).
  modulePaths: ['<rootDir>/node_modules'],
};
