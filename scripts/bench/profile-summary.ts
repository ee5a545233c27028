/**
 * What a CPU profile (`make bench BENCH_ARGS='--profile DIR'`, node --cpu-prof) spent its busy time
 * on while it served requests: self time by where the code lives (our src/ by file, each package in
 * node_modules, Node's own internals, native code, the garbage collector), and the heaviest
 * functions. The window is from the first to the last sample whose stack holds `--marker` (a
 * function of the measured operation), so start-up (module loading, schema compiling) and the idle
 * time after the last round are left out.
 *
 *   tsx scripts/bench/profile-summary.ts [--marker NAME] [--requests N] [--top N] FILE.cpuprofile...
 *   tsx scripts/bench/profile-summary.ts --stalls N FILE.cpuprofile...
 *
 * With --requests (the requests the process served in the window, e.g. from the bench's rounds),
 * the figures are also given in µs per request. With --stalls, the N longest stretches in which
 * the thread was never idle (its event loop answered nothing else meanwhile), each with what ran.
 */
import fs from 'node:fs';
import path from 'node:path';
import { commandLine } from '../lib/command-line.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  /** Monotonic clock, µs. */
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const HELP = `usage: tsx scripts/bench/profile-summary.ts [--marker NAME] [--requests N] [--top N] FILE.cpuprofile...
       tsx scripts/bench/profile-summary.ts --stalls N [--top N] FILE.cpuprofile...

What a CPU profile (node --cpu-prof) spent its busy time on while it served requests: self time by
where the code lives, and the heaviest functions; or, with --stalls, its longest busy stretches.
  --marker NAME   a function on the stack of every request served (default: answer)
  --requests N    requests served in the window: figures in µs per request too
  --top N         heaviest functions listed (default 25; with --stalls, per stretch, default 8)
  --stalls N      the N longest stretches without an idle sample (the event loop busy throughout),
                  each with its length, when it ended (µs of the monotonic clock, as the stall
                  probe's endUs) and what ran in it
  --probe FILE    with --stalls: the stall probe's N latest timer runs (hostile/run.ts --profile
                  writes stalls.<scenario>.json) instead, each with what ran while it waited
  -h, --help      this text

example: tsx scripts/bench/profile-summary.ts --requests 50000 /tmp/b/profile/*.cpuprofile`;

/** Where a function lives, as the summary groups it. */
function placeOf(url: string, functionName: string): string {
  if (url === '') {
    if (functionName === '(garbage collector)') return 'garbage collector';
    if (functionName.startsWith('(')) return functionName;
    // Native functions (a socket's write with the kernel's loopback work under it, a hash's update)
    // and code V8 compiled from a string (Ajv's validators).
    return 'native (socket writes, hashing, …) or compiled from a string';
  }
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + '/node_modules/'.length).split('/');
    return `package ${rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (url.startsWith('node:')) return `node ${url.slice(5).split('/')[0]}`;
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1).replace(/\?.*$/, '');
  const scripts = url.indexOf('/scripts/');
  if (scripts >= 0) return url.slice(scripts + 1);
  return url;
}

/** A profile's nodes by id, each node's parent, and who on a sample's stack asked for its work. */
function treeOf(profile: Profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  /** The innermost frame of the sample's stack in the program's own code or a package: who asked for the native or Node work below it. */
  const ownerOf = (id: number): string => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { functionName, url, lineNumber } = byId.get(at)!.callFrame;
      if (url.includes('/src/') || url.includes('/scripts/') || url.includes('/node_modules/'))
        return `${functionName || '(anonymous)'} ${placeOf(url, functionName)}:${lineNumber + 1}`;
    }
    const { functionName, url } = byId.get(id)!.callFrame;
    return placeOf(url, functionName);
  };
  const nameOf = (id: number): string => {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    return `${functionName || '(anonymous)'} ${placeOf(url, functionName)}${url ? `:${lineNumber + 1}` : ''}`;
  };
  return { byId, parent, ownerOf, nameOf };
}

/** A sample's time (µs, the monotonic clock) and its length, for each sample of the profile. */
function sampleTimes(profile: Profile): { at: number[]; length: (index: number) => number } {
  const at: number[] = [];
  profile.timeDeltas.reduce((time, delta, index) => (at[index] = time + delta), profile.startTime);
  return { at, length: (index) => (at[index + 1] ?? at[index]!) - at[index]! };
}

/** What ran between two samples: the busiest owners and functions (self time). */
function whatRan(profile: Profile, first: number, last: number, top: number): string[] {
  const { ownerOf, nameOf } = treeOf(profile);
  const { length } = sampleTimes(profile);
  const tally = (key: (id: number) => string) => {
    const totals = new Map<string, number>();
    for (let index = first; index <= last; index += 1) {
      const name = key(profile.samples[index]!);
      totals.set(name, (totals.get(name) ?? 0) + length(index));
    }
    return [...totals].sort((a, b) => b[1] - a[1]).slice(0, top);
  };
  return [
    '    by owner:',
    ...tally(ownerOf).map(([name, micros]) => `    ${(micros / 1000).toFixed(1).padStart(7)} ms  ${name}`),
    '    by function (self):',
    ...tally(nameOf).map(([name, micros]) => `    ${(micros / 1000).toFixed(1).padStart(7)} ms  ${name}`),
  ];
}

/** The `count` longest stretches of samples none of which is idle, longest first, with the busiest owners and functions in each. */
function stretches(file: string, count: number, top: number): string[] {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const { byId } = treeOf(profile);
  const { at } = sampleTimes(profile);
  const found: Array<{ first: number; last: number; micros: number }> = [];
  let first = -1;
  profile.samples.forEach((id, index) => {
    const idle = byId.get(id)!.callFrame.functionName === '(idle)';
    if (!idle && first < 0) first = index;
    if ((idle || index === profile.samples.length - 1) && first >= 0) {
      const last = idle ? index - 1 : index;
      found.push({ first, last, micros: (at[last + 1] ?? at[last]!) - at[first]! });
      first = -1;
    }
  });
  const longest = found.sort((a, b) => b.micros - a.micros).slice(0, count);
  return [
    `${path.basename(file)}: ${found.length} busy stretches; the ${longest.length} longest:`,
    ...longest.flatMap((stretch) => [
      `${(stretch.micros / 1000).toFixed(1).padStart(7)} ms, ended at ${Math.round(at[stretch.last + 1] ?? at[stretch.last]!)} µs (${((at[stretch.first]! - profile.startTime) / 1e6).toFixed(2)} s into the profile)`,
      ...whatRan(profile, stretch.first, stretch.last, top),
    ]),
  ];
}

/** The stall probe's `count` latest timer runs (stall-probe.ts), each with what ran while the timer waited. */
function probedStalls(file: string, probeFile: string, count: number, top: number): string[] {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const probe = JSON.parse(fs.readFileSync(probeFile, 'utf8')) as {
    tickMs: number;
    reportedLateMs: number;
    delayMs: Record<string, number>;
    stalls: Array<{ endUs: number; lateMs: number; onCpuMs?: number; runQueueMs?: number }>;
  };
  const { at } = sampleTimes(profile);
  const worst = [...probe.stalls].sort((a, b) => b.lateMs - a.lateMs).slice(0, count);
  return [
    `${path.basename(probeFile)}: event loop delay ${JSON.stringify(probe.delayMs)}; ${probe.stalls.length} timer runs over ${probe.reportedLateMs} ms late; the ${worst.length} latest:`,
    ...worst.flatMap((stall) => {
      // The timer was due one tick after its previous run, and ran `lateMs` after that.
      const from = stall.endUs - (stall.lateMs + probe.tickMs) * 1000;
      const first = at.findIndex((time) => time >= from);
      const after = at.findIndex((time) => time > stall.endUs);
      const last = (after < 0 ? at.length : after) - 1;
      return [
        `${stall.lateMs.toFixed(1).padStart(7)} ms late, ran at ${stall.endUs} µs (${((stall.endUs - profile.startTime) / 1e6).toFixed(2)} s into the profile)${
          stall.onCpuMs === undefined ? '' : `; the loop's thread ${stall.onCpuMs} ms on a CPU, ${stall.runQueueMs} ms waiting for one`
        }`,
        ...(first < 0 || last < first ? ['    outside the profile'] : whatRan(profile, first, last, top)),
      ];
    }),
  ];
}

function summarize(file: string, marker: string, requests: number | undefined, top: number): string[] {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const { byId, parent, ownerOf } = treeOf(profile);
  const marked = new Map<number, boolean>();
  const isMarked = (id: number): boolean => {
    const known = marked.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id)!;
    const up = parent.get(id);
    const result = node.callFrame.functionName === marker || (up !== undefined && isMarked(up));
    marked.set(id, result);
    return result;
  };
  let first = -1;
  let last = -1;
  profile.samples.forEach((id, index) => {
    if (isMarked(id)) {
      if (first < 0) first = index;
      last = index;
    }
  });
  if (first < 0) return [`${path.basename(file)}: no sample under ${marker}`];
  const owners = new Map<string, number>();
  const places = new Map<string, number>();
  const functions = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (let index = first; index <= last; index += 1) {
    // A sample's delta is the time since the one before; the next sample's delta is this one's length.
    const micros = profile.timeDeltas[index + 1] ?? 0;
    const node = byId.get(profile.samples[index]!)!;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idle += micros;
      continue;
    }
    busy += micros;
    const place = placeOf(url, functionName);
    places.set(place, (places.get(place) ?? 0) + micros);
    const owner = ownerOf(profile.samples[index]!);
    owners.set(owner, (owners.get(owner) ?? 0) + micros);
    const name = `${functionName || '(anonymous)'} ${place}${url ? `:${lineNumber + 1}` : ''}`;
    functions.set(name, (functions.get(name) ?? 0) + micros);
  }
  const share = (micros: number) => `${((100 * micros) / busy).toFixed(1).padStart(5)} %`;
  const perRequest = (micros: number) => (requests ? `${(micros / requests).toFixed(1).padStart(7)} µs/req` : '');
  const table = (entries: Map<string, number>, count: number) =>
    [...entries]
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([name, micros]) => `  ${share(micros)} ${perRequest(micros)}  ${name}`);
  return [
    `${path.basename(file)}: ${((busy + idle) / 1e6).toFixed(1)} s between the first and last sample under ${marker}, busy ${(busy / 1e6).toFixed(2)} s${requests ? ` (${(busy / requests).toFixed(0)} µs per request over ${requests} requests)` : ''}`,
    'by place (self time):',
    ...table(places, 40),
    `by the innermost frame of our code or a package on the stack (its own time and the Node and native work it called; top ${top}):`,
    ...table(owners, top),
    `heaviest functions (self time, top ${top}):`,
    ...table(functions, top),
  ];
}

function main(): void {
  const { values, positionals } = commandLine('profile-summary', HELP, {
    options: {
      marker: { type: 'string' },
      requests: { type: 'string' },
      top: { type: 'string' },
      stalls: { type: 'string' },
      probe: { type: 'string' },
    },
    allowPositionals: true,
  });
  if (positionals.length === 0) {
    console.error('profile-summary: name at least one .cpuprofile file (--help)');
    process.exit(2);
  }
  if (values.stalls !== undefined) {
    const [count, top] = [Number(values.stalls), Number(values.top ?? 8)];
    for (const file of positionals) console.log((values.probe ? probedStalls(file, values.probe, count, top) : stretches(file, count, top)).join('\n'), '\n');
    return;
  }
  const requests = values.requests === undefined ? undefined : Number(values.requests);
  for (const file of positionals) console.log(summarize(file, values.marker ?? 'answer', requests, Number(values.top ?? 25)).join('\n'), '\n');
}

main();
