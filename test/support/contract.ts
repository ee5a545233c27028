import fs from 'node:fs';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { Middleware } from 'openapi-fetch';
import { parse as parseYaml } from 'yaml';
import { openApiSpecPath } from '../../src/config/paths.js';
import { createJsonSchemaAjv } from '../../src/validation/json-schema.js';

type Responses = Record<string, { content?: Record<string, { schema?: unknown }> }>;
const document = parseYaml(fs.readFileSync(openApiSpecPath, 'utf8')) as { paths: Record<string, Record<string, { responses?: Responses }>> };

/**
 * The spec leaves answers and callback bodies open (`additionalProperties: true`) so that clients
 * tolerate members a later version adds; the service itself must still send only what the spec
 * names, so the checks below read every open object as closed.
 */
function closed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(closed);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, key === 'additionalProperties' && inner === true ? false : closed(inner)]));
  }
  return value;
}

const ajv = createJsonSchemaAjv();
ajv.addSchema({ ...(closed(document) as object), $id: 'openapi' });
const validators = new Map<string, ValidateFunction>();

const pointer = (...segments: string[]) => segments.map((segment) => segment.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

/**
 * Checks an interface B response against specs/openapi.yaml: its status must be documented for
 * the operation and its JSON body must match the documented schema. Returns the problems found.
 */
export function responseProblems(method: string, schemaPath: string, status: number, body: unknown): string[] {
  const operation = document.paths[schemaPath]?.[method.toLowerCase()];
  if (!operation) return [`${method} ${schemaPath}: not an operation of the spec`];
  const documented = operation.responses?.[String(status)] ? String(status) : operation.responses?.default ? 'default' : undefined;
  if (!documented) return [`${method} ${schemaPath}: status ${status} is not documented`];
  if (!operation.responses![documented]!.content?.['application/json']?.schema) return [];
  const key = `${method} ${schemaPath} ${documented}`;
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile({
      $ref: `openapi#/${pointer('paths', schemaPath, method.toLowerCase(), 'responses', documented, 'content', 'application/json', 'schema')}`,
    });
    validators.set(key, validate);
  }
  return validate(body) ? [] : [`${method} ${schemaPath} ${status}: ${JSON.stringify(validate.errors)}`];
}

const CALLBACKS = ['SendRegisterDocumentResponse', 'SendRegisterDocumentResultResponse', 'SendDemandContentResponse', 'SendDocumentFileResultResponse'];

/** Checks a callback body against its payload schema in specs/openapi.yaml; returns the problems found. */
export function callbackProblems(name: string, body: unknown): string[] {
  if (!CALLBACKS.includes(name)) return [`${name}: not a callback of the spec`];
  let validate = validators.get(name);
  if (!validate) {
    validate = ajv.compile({ $ref: `openapi#/${pointer('components', 'schemas', name)}` });
    validators.set(name, validate);
  }
  return validate(body) ? [] : [`${name}: ${JSON.stringify(validate.errors)}`];
}

/** An openapi-fetch middleware that records every response's contract problems into `problems`. */
export function contractCheck(problems: string[]): Middleware {
  return {
    async onResponse({ request, response, schemaPath }) {
      const text = await response.clone().text();
      problems.push(...responseProblems(request.method, schemaPath, response.status, text ? JSON.parse(text) : undefined));
    },
  };
}
