/**
 * Three projects: `unit` (pure logic and in-memory fakes, no services), `integration` (real Kafka
 * broker and DynamoDB emulator) and `deploy` (packages serverless.yml offline with osls and checks
 * the CloudFormation; no services). Jest runs a project's global setup only when one of its tests
 * is selected, so `npm run test:unit` never starts the local stack.
 */
const swc = ['@swc/jest', { jsc: { target: 'es2023', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }];
// middy ships ESM only; jest (CommonJS) needs it transformed like our own sources and mapped to its file.
const common = {
  testEnvironment: 'node',
  transform: { '^.+\\.(t|j)s$': swc },
  transformIgnorePatterns: ['/node_modules/(?!@middy/)'],
  moduleNameMapper: {
    // middy 7 exports only an `import` condition, which jest's CommonJS resolver does not take.
    '^@middy/([a-z-]+)$': '<rootDir>/node_modules/@middy/$1/index.js',
    // Handler files in tests import the engine by its package name, as a stream project's do.
    '^kafka-lambda-direct$': '<rootDir>/lib/index.ts',
    '^kafka-lambda-direct/testing$': '<rootDir>/lib/testing/index.ts',
  },
  setupFiles: ['<rootDir>/test/setup/env.ts'],
};

module.exports = {
  testTimeout: 60000,
  maxWorkers: 2,
  // The chaos suite last, after every other file has finished or started (see the sequencer).
  testSequencer: '<rootDir>/test/setup/sequencer.js',
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/{integration,e2e,chaos}/**/*.test.ts'],
      globalSetup: '<rootDir>/test/setup/global-setup.ts',
      globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
    },
    { ...common, displayName: 'deploy', testMatch: ['<rootDir>/test/deploy/**/*.test.ts'] },
  ],
};
