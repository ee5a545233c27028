/**
 * Validates specs/ beyond what the format validators check:
 * - specs/openrpc.json against the OpenRPC meta-schema (@open-rpc/schema-utils-js), dereferenced;
 * - project rules for both specs: every component schema has a title (readable generated names),
 *   every OpenRPC method and every OpenAPI operation has at least one example, and every error
 *   code of the OpenRPC document is in its table of codes, `x-error-codes`.
 * specs/openapi.yaml itself is linted by Redocly CLI in `make check-specs`.
 *   tsx scripts/validate-specs.ts
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseOpenRPCDocument } from '@open-rpc/schema-utils-js';
import { parse as parseYaml } from 'yaml';
import { commandLine } from './lib/command-line.ts';

const HELP = `usage: tsx scripts/validate-specs.ts

Validates specs/ beyond the format validators: specs/openrpc.json against the OpenRPC meta-schema,
and both specs against the project's rules (titled schemas, an example for every method and
operation, every error code in x-error-codes). make check-specs runs it.

options:
  -h, --help   this text

example: tsx scripts/validate-specs.ts`;

commandLine('validate-specs', HELP, { options: {} });

const root = path.resolve(import.meta.dirname, '..');
const problems: string[] = [];

function untitled(schemas: Record<string, { title?: string }> | undefined, where: string): void {
  for (const [name, schema] of Object.entries(schemas ?? {})) {
    if (!schema.title) problems.push(`${where}: schema ${name} has no title`);
  }
}

function hasExample(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasExample);
  if (value && typeof value === 'object') {
    return Object.entries(value).some(([key, inner]) => ((key === 'examples' || key === 'example') && inner !== undefined) || hasExample(inner));
  }
  return false;
}

async function validateOpenRpc(): Promise<void> {
  const file = 'specs/openrpc.json';
  let raw: {
    methods: Array<{ name: string; examples?: unknown[]; 'x-error-examples'?: Array<{ error: { code: number } }> }>;
    components?: { schemas?: Record<string, { title?: string }>; errors?: Record<string, { code: number }> };
    'x-error-codes'?: Array<{ code: number }>;
  };
  try {
    raw = JSON.parse(await fs.readFile(path.join(root, file), 'utf8'));
  } catch (error) {
    problems.push(`${file}: not JSON: ${(error as Error).message}`);
    return;
  }
  try {
    await parseOpenRPCDocument(raw as never, { validate: true, dereference: true });
  } catch (error) {
    problems.push(`${file}: ${(error as Error).message}`);
    return;
  }
  untitled(raw.components?.schemas, file);
  for (const method of raw.methods) {
    if (!method.examples || method.examples.length === 0) problems.push(`${file}: method ${method.name} has no example`);
  }
  // The table of error codes (x-error-codes, shown on /docs/openrpc) lists every code the spec uses elsewhere.
  const listed = new Set((raw['x-error-codes'] ?? []).map((entry) => entry.code));
  const used = [
    ...Object.values(raw.components?.errors ?? {}).map((error) => error.code),
    ...raw.methods.flatMap((method) => (method['x-error-examples'] ?? []).map((example) => example.error.code)),
  ];
  for (const code of new Set(used)) if (!listed.has(code)) problems.push(`${file}: error code ${code} is not in x-error-codes`);
}

async function validateOpenApi(): Promise<void> {
  const file = 'specs/openapi.yaml';
  let document: { paths?: Record<string, Record<string, unknown>>; components?: { schemas?: Record<string, { title?: string }> } };
  try {
    document = parseYaml(await fs.readFile(path.join(root, file), 'utf8')) as typeof document;
  } catch (error) {
    problems.push(`${file}: not YAML: ${(error as Error).message}`);
    return;
  }
  untitled(document.components?.schemas, file);
  for (const [route, item] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      if (!['get', 'put', 'post', 'delete', 'patch'].includes(method)) continue;
      if (!hasExample(operation)) problems.push(`${file}: ${method.toUpperCase()} ${route} has no example`);
    }
  }
}

await validateOpenRpc();
await validateOpenApi();
if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  process.exit(1);
}
console.log('specs: OpenRPC document valid; titles and examples present in both specs');
