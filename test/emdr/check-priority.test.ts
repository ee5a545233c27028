import fs from 'node:fs';
import os from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { DocumentCheckPool } from '../../src/emdr/pipeline/document-check/document-check.js';
import { FIXTURE_XML } from '../support/emdr.js';
import { until } from '../support/until.js';

/** This process's threads with their nice values (/proc/self/task/<tid>/stat, field 19). */
function threadNiceness(): Map<number, number> {
  const threads = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc/self/task')) {
    const stat = fs.readFileSync(`/proc/self/task/${entry}/stat`, 'utf8');
    threads.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
  }
  return threads;
}

const pool = new DocumentCheckPool(2);
afterAll(() => pool.close());

describe.runIf(process.platform === 'linux')('the document check workers', () => {
  it('run at a lower CPU priority than the event loop, so that checks take only the CPU it leaves', async () => {
    const own = os.getPriority();
    const before = new Set(threadNiceness().keys());
    pool.start();
    // The workers lower their priority as they start: wait for both.
    const lowered = await until(
      'the new threads at the workers’ priority',
      async () => [...threadNiceness()].filter(([thread, nice]) => !before.has(thread) && nice === Math.min(19, own + 5)).length,
      (count) => count >= 2,
    );
    expect(lowered).toBeGreaterThanOrEqual(2);
    // This thread, the event loop's, keeps its priority; and the workers still check documents.
    expect(os.getPriority()).toBe(own);
    const outcome = await pool.check(Buffer.from(FIXTURE_XML), { timeoutMs: 30_000 });
    expect(outcome.xmlFailure).toBeUndefined();
  });
});
