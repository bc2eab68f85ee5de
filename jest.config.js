/**
 * Tests are TypeScript compiled by `tsc` (the same compiler and decorator metadata as the product)
 * into dist/; Jest runs the compiled files, so there is no second transpiler to keep in step.
 * `npm test` builds first; when running Jest by hand, run `npm run build` before it.
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/dist/test'],
  testMatch: ['**/*.test.js'],
  setupFiles: ['reflect-metadata'],
  testTimeout: 60000,
  maxWorkers: 2,
};
