/**
 * What Linux perf saw of a bench's processes: every thread's samples (the garbage collector's
 * helper threads included), and for one thread the samples by the innermost frame of our code or a
 * package, with the kernel's and Node's native work charged to the code that asked for it. Unlike
 * node --cpu-prof (profile-summary.ts), the kernel's share of a socket write and the collector's
 * other threads are counted, and perf's sampling does not slow the JavaScript it samples.
 *
 * Recorded with node's jitdump (--perf-prof writes jit-PID.dump into the process's working
 * directory; perf inject --jit reads it from there, so leave it in place): docs/benchmarks/register-document-profile.md
 * shows the whole recipe.
 *
 *   perf script -F comm,pid,tid,ip,sym,dso -i PERF.jit.data > samples.txt
 *   tsx scripts/bench/perf-summary.ts [--pid N] [--top N] [--per-request HZ:REQUESTS] samples.txt
 */
import fs from 'node:fs';
import { commandLine } from '../lib/command-line.js';

const HELP = `usage: tsx scripts/bench/perf-summary.ts [--pid N] [--top N] [--per-request HZ:REQUESTS] FILE

FILE is the text of perf script -F comm,pid,tid,ip,sym,dso over a recording made with call graphs
(perf record -g -k mono, then perf inject --jit). Prints every process's threads with their samples;
with --pid, that process's main thread by the innermost frame of our code (dist/src, scripts) or a
package (node_modules), and the kernel's share of each.
  --pid N                    the process to break down
  --top N                    places and functions listed (default 30)
  --per-request HZ:REQUESTS  the sampling frequency and the requests the process served while
                             recorded: figures in µs per request too
  -h, --help                 this text`;

interface Sample {
  comm: string;
  pid: number;
  tid: number;
  /** Innermost first: [symbol, dso]. */
  frames: Array<[string, string]>;
}

const HEADER = /^\s*(.+?)\s+(\d+)\/(\d+)\s*$/;
const FRAME = /^\s*[0-9a-f]+\s+(.*?)\s+\(([^)]*)\)\s*$/;
/** Our code or a package's: where a sample is charged. */
const OURS = /(?:dist\/src|scripts|node_modules)\/[^:\s]+/;

function* samples(text: string): Generator<Sample> {
  let current: Sample | undefined;
  for (const line of text.split('\n')) {
    const header = HEADER.exec(line);
    if (header && !line.startsWith('\t')) {
      if (current) yield current;
      current = { comm: header[1]!, pid: Number(header[2]), tid: Number(header[3]), frames: [] };
      continue;
    }
    const frame = FRAME.exec(line);
    if (frame && current) current.frames.push([frame[1]!, frame[2]!]);
  }
  if (current) yield current;
}

/** The innermost frame of ours: its file and function, or undefined when the stack has none (Node's own work). */
function chargedTo(sample: Sample): { file: string; name: string } | undefined {
  for (const [symbol] of sample.frames) {
    const file = OURS.exec(symbol)?.[0];
    if (file) return { file, name: `${symbol.replace(/^JS:\S?'?/, '').split(' ')[0] || '(anonymous)'} ${file}` };
  }
  return undefined;
}

function count<K>(map: Map<K, number>, key: K): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function main(): void {
  const { values, positionals } = commandLine('perf-summary', HELP, {
    allowPositionals: true,
    options: { pid: { type: 'string' }, top: { type: 'string', default: '30' }, 'per-request': { type: 'string' } },
  });
  if (positionals.length !== 1) {
    console.error('perf-summary: one FILE, the text of perf script (--help for the usage)');
    process.exit(2);
  }
  const top = Number(values.top);
  const pid = values.pid === undefined ? undefined : Number(values.pid);
  const [hz, requests] = (values['per-request'] ?? '').split(':').map(Number);
  const perRequest = (n: number) => (hz && requests ? `  ${((n / hz / requests) * 1e6).toFixed(1).padStart(7)} µs/request` : '');

  const threads = new Map<string, number>();
  const places = new Map<string, number>();
  const functions = new Map<string, number>();
  const kernelOf = new Map<string, number>();
  let mainSamples = 0;
  for (const sample of samples(fs.readFileSync(positionals[0]!, 'utf8'))) {
    count(threads, `${sample.pid} ${sample.comm}${sample.tid === sample.pid ? '' : ` (${sample.tid})`}`);
    if (sample.pid !== pid || sample.tid !== pid) continue;
    mainSamples += 1;
    const charged = chargedTo(sample);
    const place = charged?.file ?? '(Node.js and V8 alone: HTTP parsing, the event loop, the collector)';
    count(places, place);
    count(functions, charged?.name ?? place);
    if (sample.frames[0]?.[1] === '[kernel.kallsyms]') count(kernelOf, place);
  }

  console.log('samples by thread (pid comm (tid)):');
  for (const [thread, n] of [...threads].sort((a, b) => b[1] - a[1]).slice(0, 3 * top)) console.log(`${String(n).padStart(8)}  ${thread}`);
  if (pid === undefined) return;
  console.log(`\nprocess ${pid}, main thread: ${mainSamples} samples${perRequest(mainSamples)}`);
  console.log('by place (innermost frame of ours; in brackets the part of it in the kernel):');
  for (const [place, n] of [...places].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${String(n).padStart(8)} (${String(kernelOf.get(place) ?? 0).padStart(5)})${perRequest(n)}  ${place}`);
  console.log('\nby function:');
  for (const [name, n] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${String(n).padStart(8)}${perRequest(n)}  ${name}`);
}

main();
