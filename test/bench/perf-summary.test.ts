import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outcomeOf, type CliResult } from '../support/cli.js';
import { spawnTsProgram } from '../support/processes.js';

/**
 * scripts/bench/perf-summary.ts on perf script's text (the layout of `perf script -F
 * comm,pid,tid,ip,sym,dso`: a thread's line, then its frames innermost first): each sample is
 * charged to the innermost frame of our code or a package, the kernel's part told apart, and other
 * threads and processes only counted.
 */
const SAMPLES = `MainThread  10/10
\t    ffff tcp_sendmsg ([kernel.kallsyms])
\t      21 JS:*'end node:_http_outgoing:1143:45 (/w/jitted-10-1.so)
\t      33 JS:+'sendJson file:///w/dist/src/http/respond.js:2:25 (/w/jitted-10-2.so)

MainThread  10/10
\t      44 Builtin:KeyedLoadIC_Megamorphic (/w/node)
\t      55 JS:*'hashAtOnce file:///w/dist/src/emdr/intake/body/body-hash.js:62:20 (/w/jitted-10-3.so)
\t      66 JS:+'sendJson file:///w/dist/src/http/respond.js:2:25 (/w/jitted-10-2.so)

MainThread  10/10
\t      77 uv__io_poll (/w/node)

MainThread  10/10
\t      88 JS:*'update node:internal/crypto/hash:146:40 (/w/jitted-10-4.so)
\t      99 JS:*'hashAtOnce file:///w/dist/src/emdr/intake/body/body-hash.js:62:20 (/w/jitted-10-3.so)

V8Worker  10/12
\t      aa v8::internal::ConcurrentMarking::Run (/w/node)

MainThread  20/20
\t      bb JS:*'send /w/scripts/bench/baseline.ts:37:1406 (/w/jitted-20-1.so)
`;

describe('perf-summary', () => {
  let dir: string;
  let run: CliResult;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-perf-summary-'));
    const file = path.join(dir, 'samples.txt');
    await fs.writeFile(file, SAMPLES);
    const child = spawnTsProgram('scripts/bench/perf-summary.ts', ['--pid', '10', '--per-request', '1000:2', file]);
    run = await outcomeOf(child, 60_000);
  }, 70_000);

  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('counts every thread of every process', () => {
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^\s+4 {2}10 MainThread$/m);
    expect(run.stdout).toMatch(/^\s+1 {2}10 V8Worker \(12\)$/m);
    expect(run.stdout).toMatch(/^\s+1 {2}20 MainThread$/m);
  });

  it("charges the chosen process's main thread to the innermost frame of ours, with the kernel's part", () => {
    // 4 samples at 1,000 Hz over 2 requests: 2 ms a request.
    expect(run.stdout).toMatch(/main thread: 4 samples\s+2000\.0 µs\/request$/m);
    expect(run.stdout).toMatch(/^\s+2 \(\s+0\)\s+1000\.0 µs\/request {2}dist\/src\/emdr\/intake\/body\/body-hash\.js$/m);
    expect(run.stdout).toMatch(/^\s+1 \(\s+1\)\s+500\.0 µs\/request {2}dist\/src\/http\/respond\.js$/m);
    expect(run.stdout).toMatch(/^\s+1 \(\s+0\)\s+500\.0 µs\/request {2}\(Node\.js and V8 alone/m);
    expect(run.stdout).toMatch(/^\s+2\s+1000\.0 µs\/request {2}hashAtOnce dist\/src\/emdr\/intake\/body\/body-hash\.js$/m);
  });
});
