/**
 * Fails on an incompatible change to a spec without a version bump, against the last released
 * specs kept in specs/released/:
 * - specs/openapi.yaml: `oasdiff breaking` (its ERR-level checks; a new member of an answer is
 *   compatible, a new value of an `x-extensible-enum` too), plus what oasdiff does not judge: the
 *   callbacks, and answers that widen beyond objects and enums the released spec closed;
 * - specs/openrpc.json: the structural comparison below (no maintained OpenRPC differ exists).
 * A breaking change with a changed info.version passes, and is listed.
 *   tsx scripts/check-breaking.ts [--root DIR] [--oasdiff PATH]
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { parseOpenRPCDocument } from '@open-rpc/schema-utils-js';
import { parse as parseYaml } from 'yaml';
import { inlineLocalRefs } from '../src/validation/inline-refs.js';

const run = promisify(execFile);

type Schema = {
  title?: string;
  type?: string | string[];
  enum?: unknown[];
  required?: string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  pattern?: string;
  const?: unknown;
};

interface RpcMethod {
  name: string;
  tags?: Array<{ name: string }>;
  params: Array<{ name: string; required?: boolean; schema: Schema }>;
  result?: { schema: Schema };
  errors?: Array<{ code: number }>;
}

const typesOf = (schema: Schema): Set<string> => new Set(schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type]);

/**
 * What makes `next` incompatible with `base`. Direction `request`: the server must still accept
 * everything it accepted. Direction `response`: clients must still get everything they relied on.
 */
function schemaBreaks(base: Schema, next: Schema, where: string, direction: 'request' | 'response'): string[] {
  const problems: string[] = [];
  const baseTypes = typesOf(base);
  const nextTypes = typesOf(next);
  if (baseTypes.size > 0) {
    const lost = [...baseTypes].filter((type) => !nextTypes.has(type) && !(type === 'integer' && nextTypes.has('number')));
    const gained = [...nextTypes].filter((type) => !baseTypes.has(type));
    if (direction === 'request' && (lost.length > 0 || nextTypes.size === 0) && nextTypes.size > 0)
      problems.push(`${where}: no longer accepts type ${lost.join(', ')}`);
    if (direction === 'response' && (lost.length > 0 || gained.length > 0))
      problems.push(`${where}: type changed from ${[...baseTypes].join('|')} to ${[...nextTypes].join('|') || 'any'}`);
  }
  if (direction === 'request' && base.enum && next.enum) {
    const removed = base.enum.filter((value) => !next.enum!.some((candidate) => JSON.stringify(candidate) === JSON.stringify(value)));
    if (removed.length > 0) problems.push(`${where}: no longer accepts ${removed.map((value) => JSON.stringify(value)).join(', ')}`);
  }
  if (direction === 'request' && !base.enum && next.enum) problems.push(`${where}: now restricted to an enum`);
  if (direction === 'response' && base.enum && next.enum) {
    const added = next.enum.filter((value) => !base.enum!.some((candidate) => JSON.stringify(candidate) === JSON.stringify(value)));
    if (added.length > 0) problems.push(`${where}: may now be ${added.map((value) => JSON.stringify(value)).join(', ')}`);
  }
  if (direction === 'request' && next.pattern !== undefined && next.pattern !== base.pattern) problems.push(`${where}: pattern changed to ${next.pattern}`);
  const baseRequired = new Set(base.required ?? []);
  const nextRequired = new Set(next.required ?? []);
  for (const name of nextRequired) if (direction === 'request' && !baseRequired.has(name)) problems.push(`${where}.${name}: became required`);
  for (const name of baseRequired) if (direction === 'response' && !nextRequired.has(name)) problems.push(`${where}.${name}: no longer always present`);
  if (direction === 'request' && base.additionalProperties !== false && next.additionalProperties === false)
    problems.push(`${where}: no longer accepts additional properties`);
  for (const [name, baseProperty] of Object.entries(base.properties ?? {})) {
    const nextProperty = next.properties?.[name];
    if (!nextProperty) {
      if (direction === 'response') problems.push(`${where}.${name}: removed`);
      else if (next.additionalProperties === false) problems.push(`${where}.${name}: no longer accepted`);
      continue;
    }
    problems.push(...schemaBreaks(baseProperty, nextProperty, `${where}.${name}`, direction));
  }
  if (base.items && next.items) problems.push(...schemaBreaks(base.items, next.items, `${where}[]`, direction));
  return problems;
}

function openRpcBreaks(base: { methods: RpcMethod[] }, next: { methods: RpcMethod[] }): string[] {
  const problems: string[] = [];
  const isInternal = (method: RpcMethod) => (method.tags ?? []).some((tag) => tag.name === 'internal-channel');
  for (const baseMethod of base.methods) {
    const nextMethod = next.methods.find((method) => method.name === baseMethod.name);
    if (!nextMethod) {
      problems.push(`${baseMethod.name}: method removed`);
      continue;
    }
    if (isInternal(baseMethod) !== isInternal(nextMethod))
      problems.push(`${baseMethod.name}: moved to the ${isInternal(nextMethod) ? 'internal' : 'public'} listener`);
    for (const param of nextMethod.params) {
      const baseParam = baseMethod.params.find((candidate) => candidate.name === param.name);
      if (param.required && !baseParam?.required) problems.push(`${baseMethod.name}(${param.name}): param became required`);
      if (baseParam) problems.push(...schemaBreaks(baseParam.schema, param.schema, `${baseMethod.name}(${param.name})`, 'request'));
    }
    for (const baseParam of baseMethod.params) {
      if (!nextMethod.params.some((param) => param.name === baseParam.name)) problems.push(`${baseMethod.name}(${baseParam.name}): param removed`);
    }
    if (baseMethod.result && nextMethod.result)
      problems.push(...schemaBreaks(baseMethod.result.schema, nextMethod.result.schema, `${baseMethod.name} result`, 'response'));
    // A client handles the errors a method documents; a new one takes it down an unknown branch.
    const baseCodes = new Set((baseMethod.errors ?? []).map((error) => error.code));
    for (const error of nextMethod.errors ?? []) if (!baseCodes.has(error.code)) problems.push(`${baseMethod.name}: may now answer error ${error.code}`);
  }
  return problems;
}

interface OpenApiOperation {
  parameters?: unknown[];
  requestBody?: unknown;
  responses?: Record<string, unknown>;
  callbacks?: Record<string, Record<string, Record<string, OpenApiOperation>>>;
}
interface OpenApiDocument {
  info: { version: string };
  paths?: Record<string, Record<string, OpenApiOperation>>;
}

/**
 * What an answer or callback body may now carry that clients generated from the released spec
 * reject (okhttp-gson rejects unknown members, Java enums unknown values): a member added to an
 * object the released spec closed (`additionalProperties: false`), such an object opened, a closed
 * `enum` opened. A member added to an open object, or a value to an `x-extensible-enum`, is
 * compatible. (A value added to a closed enum: oasdiff reports it for answers, schemaBreaks for
 * callback bodies.)
 */
function widened(base: Schema, next: Schema, at: string): string[] {
  // Named after the component (every component schema has a title), so a shared schema reads once.
  const where = next.title ?? at;
  const problems: string[] = [];
  if (base.additionalProperties === false && next.additionalProperties !== false)
    problems.push(`${where}: the released spec closes this object (additionalProperties: false); now it is open`);
  if (base.enum && !next.enum) problems.push(`${where}: the released spec closes its values (enum); now they are open`);
  for (const name of Object.keys(next.properties ?? {})) {
    const baseProperty = base.properties?.[name];
    if (baseProperty) problems.push(...widened(baseProperty, next.properties![name]!, `${where}.${name}`));
    else if (base.additionalProperties === false) problems.push(`${where}.${name}: added to an object the released spec closes (additionalProperties: false)`);
  }
  if (base.items && next.items) problems.push(...widened(base.items, next.items, `${where}[]`));
  return problems;
}

/**
 * What oasdiff does not judge in interface B. The callbacks (oasdiff v1.30.0 skips them): the
 * clinic receives their bodies, so they are compared as answers, and it relies on their headers.
 * Answers and callback bodies that widened beyond what the released spec closed.
 */
function openApiBreaks(base: OpenApiDocument, next: OpenApiDocument): string[] {
  const problems: string[] = [];
  const jsonSchema = (document: OpenApiDocument, holder: unknown) =>
    (inlineLocalRefs(document, holder) as { content?: Record<string, { schema?: Schema }> } | undefined)?.content?.['application/json']?.schema;
  const headerNames = (document: OpenApiDocument, operation: OpenApiOperation) =>
    (inlineLocalRefs(document, operation.parameters ?? []) as Array<{ in: string; name: string }>)
      .filter((parameter) => parameter.in === 'header')
      .map((parameter) => parameter.name.toLowerCase());
  for (const [route, item] of Object.entries(base.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      const nextOperation = next.paths?.[route]?.[method];
      // oasdiff reports a removed operation.
      if (!nextOperation || typeof operation !== 'object') continue;
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const [baseBody, nextBody] = [jsonSchema(base, response), jsonSchema(next, nextOperation.responses?.[status])];
        if (baseBody && nextBody) problems.push(...widened(baseBody, nextBody, `${method.toUpperCase()} ${route} ${status}`));
      }
      for (const [name, expressions] of Object.entries(operation.callbacks ?? {})) {
        for (const [expression, callbackItem] of Object.entries(expressions)) {
          for (const [callbackMethod, callback] of Object.entries(callbackItem)) {
            const where = `callback ${name}`;
            const nextCallback = nextOperation.callbacks?.[name]?.[expression]?.[callbackMethod];
            if (!nextCallback) {
              problems.push(`${where}: no longer sent as ${callbackMethod.toUpperCase()} ${expression}`);
              continue;
            }
            const nextHeaders = headerNames(next, nextCallback);
            for (const header of headerNames(base, callback)) if (!nextHeaders.includes(header)) problems.push(`${where}: header ${header} no longer sent`);
            const [baseBody, nextBody] = [jsonSchema(base, callback.requestBody), jsonSchema(next, nextCallback.requestBody)];
            if (baseBody && nextBody)
              problems.push(...schemaBreaks(baseBody, nextBody, `${where} body`, 'response'), ...widened(baseBody, nextBody, `${where} body`));
          }
        }
      }
    }
  }
  return problems;
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { root: { type: 'string' }, oasdiff: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    console.log(
      'usage: tsx scripts/check-breaking.ts [--root DIR] [--oasdiff PATH]\n\nFails on an incompatible spec change without a version bump, against specs/released/.',
    );
    return 0;
  }
  const root = path.resolve(values.root ?? path.join(import.meta.dirname, '..'));
  const oasdiff = values.oasdiff ?? path.join(root, '.tools', 'oasdiff');
  const released = path.join(root, 'specs', 'released');
  let failed = false;

  const readRpc = async (file: string) => parseOpenRPCDocument(JSON.parse(await fs.readFile(file, 'utf8')), { dereference: true, validate: false });
  const rpcBase = await readRpc(path.join(released, 'openrpc.json'));
  const rpcNext = await readRpc(path.join(root, 'specs', 'openrpc.json'));
  const rpcProblems = openRpcBreaks(rpcBase as never, rpcNext as never);
  failed = report('specs/openrpc.json', rpcBase.info.version, rpcNext.info.version, rpcProblems) || failed;

  const readApi = async (file: string) => parseYaml(await fs.readFile(file, 'utf8')) as OpenApiDocument;
  const apiBase = await readApi(path.join(released, 'openapi.yaml'));
  const apiNext = await readApi(path.join(root, 'specs', 'openapi.yaml'));
  let apiProblems: string[] = [];
  try {
    await run(oasdiff, ['breaking', path.join(released, 'openapi.yaml'), path.join(root, 'specs', 'openapi.yaml'), '--fail-on', 'ERR', '--format', 'text']);
  } catch (error) {
    const failure = error as { code?: number | string; stdout?: string; stderr?: string };
    if (failure.code === 'ENOENT') throw new Error(`oasdiff not found at ${oasdiff}: run \`make check-breaking\`, which installs it`);
    apiProblems = `${failure.stdout ?? ''}${failure.stderr ?? ''}`
      .trim()
      .split('\n')
      .filter((line) => line.trim() !== '');
    if (apiProblems.length === 0) apiProblems = [`oasdiff exited with ${String(failure.code)}`];
  }
  apiProblems.push(...new Set(openApiBreaks(apiBase, apiNext)));
  failed = report('specs/openapi.yaml', apiBase.info.version, apiNext.info.version, apiProblems) || failed;
  return failed ? 1 : 0;
}

/** Prints the outcome for one spec; true when it must fail the check. */
function report(file: string, releasedVersion: string, version: string, problems: string[]): boolean {
  if (problems.length === 0) {
    console.log(`${file}: compatible with released ${releasedVersion}`);
    return false;
  }
  const bumped = version !== releasedVersion;
  console.log(
    `${file}: incompatible with released ${releasedVersion}${bumped ? ` (allowed: version bumped to ${version})` : ` and info.version is still ${version}: bump it`}`,
  );
  for (const problem of problems) console.log(`  ${problem}`);
  return !bumped;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`check-breaking: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(2);
  },
);
