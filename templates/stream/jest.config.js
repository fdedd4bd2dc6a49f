/** Handler tests: TypeScript through swc (type checking is `tsc --noEmit`, the first half of `npm test`). */
module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/{handlers,test}/**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2023', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }],
  },
};
