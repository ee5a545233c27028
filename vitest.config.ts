import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Real PostgreSQL, real HTTP and child processes: give them time, and keep the 2-core machine calm.
    // On a loaded machine (make unit-under-load) one CLI run through tsx takes 10-15 s, and a test of
    // several takes minutes: the budget is for that; each wait inside a test keeps its own bound.
    testTimeout: 180_000,
    hookTimeout: 300_000,
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
