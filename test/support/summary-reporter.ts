import type { Reporter, TestModule } from 'vitest/node';

/** Ends the run with the plain line CI reads: `vitest: N passed, N failed, N skipped`. */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      let failedInModule = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed += 1;
        else if (state === 'failed') failedInModule += 1;
        else skipped += 1;
      }
      // A file that failed outside its tests (an import, a hook) counts as one failure.
      failed += module.state() === 'failed' && failedInModule === 0 ? 1 : failedInModule;
    }
    process.stdout.write(`\nvitest: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
