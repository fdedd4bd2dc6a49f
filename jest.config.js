/** Unit tests run without services; integration/e2e tests share one local stack (test/setup). */
const swc = ['@swc/jest', { jsc: { target: 'es2023', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }];
module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.(t|j)s$': swc },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
};
