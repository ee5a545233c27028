/**
 * What a CPU profile (`make bench BENCH_ARGS='--profile DIR'`, node --cpu-prof) spent its busy time
 * on while it served requests: self time by where the code lives (our src/ by file, each package in
 * node_modules, Node's own internals, native code, the garbage collector), and the heaviest
 * functions. The window is from the first to the last sample whose stack holds `--marker` (a
 * function of the measured operation), so start-up (module loading, schema compiling) and the idle
 * time after the last round are left out.
 *
 *   tsx scripts/bench/profile-summary.ts [--marker NAME] [--requests N] [--top N] FILE.cpuprofile...
 *
 * With --requests (the requests the process served in the window, e.g. from the bench's rounds),
 * the figures are also given in µs per request.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const HELP = `usage: tsx scripts/bench/profile-summary.ts [--marker NAME] [--requests N] [--top N] FILE.cpuprofile...
  --marker NAME   a function on the stack of every request served (default: answer)
  --requests N    requests served in the window: figures in µs per request too
  --top N         heaviest functions listed (default 25)`;

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

function summarize(file: string, marker: string, requests: number | undefined, top: number): string[] {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
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
  const { values, positionals } = parseArgs({
    options: { marker: { type: 'string' }, requests: { type: 'string' }, top: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  if (positionals.length === 0) {
    console.error('profile-summary: name at least one .cpuprofile file (--help)');
    process.exit(2);
  }
  const requests = values.requests === undefined ? undefined : Number(values.requests);
  for (const file of positionals) console.log(summarize(file, values.marker ?? 'answer', requests, Number(values.top ?? 25)).join('\n'), '\n');
}

main();
