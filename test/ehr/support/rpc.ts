import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { MethodObject, ContentDescriptorObject } from '@open-rpc/schema-utils-js/build/types.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { expect } from 'vitest';
import { openRpcSpecPath } from '../../../src/config/paths.js';
import { loadOpenRpcDocument } from '../../../src/ehr/spec.js';
import { createJsonSchemaAjv } from '../../../src/validation/json-schema.js';

const SPEC_INFO = (JSON.parse(readFileSync(openRpcSpecPath, 'utf8')) as { info: { version: string; 'x-compatible-versions'?: string[] } }).info;

/** The version segment of the endpoint: info.version of specs/openrpc.json. */
export const VERSION = SPEC_INFO.version;

/** Every version interface A answers at: its own, then the compatible released ones the spec lists. */
export const SERVED_VERSIONS = [VERSION, ...(SPEC_INFO['x-compatible-versions'] ?? [])];

export interface RpcAnswer {
  result?: unknown;
  error?: { code: number; message: string; data?: { reason?: string; errors?: Array<{ path: string; message: string }> } };
}

/** Result validators of every method, compiled from the dereferenced OpenRPC document (Ajv 2020 + formats). */
export async function resultValidators(): Promise<Map<string, ValidateFunction>> {
  const document = await loadOpenRpcDocument();
  const ajv = createJsonSchemaAjv();
  return new Map((document.methods as MethodObject[]).map((method) => [method.name, ajv.compile((method.result as ContentDescriptorObject).schema as object)]));
}

const validators = resultValidators();

/** Every successful result a test receives is checked against its method's result schema. */
export async function expectResultMatchesSchema(method: string, result: unknown): Promise<void> {
  const validate = (await validators).get(method)!;
  expect(validate(result), `${method} result: ${JSON.stringify(validate.errors)}`).toBe(true);
}

export function sha1hex(text: string): string {
  return createHash('sha1').update(text, 'utf8').digest('hex');
}

/** One JSON-RPC call over real HTTP, as the peer SDK sends it (charset, apiKey, string id). */
export async function rpc(baseUrl: string, method: string, params: unknown = {}, cred?: { user: string; token: string }): Promise<RpcAnswer> {
  const id = `call-${Math.random().toString(36).slice(2)}`;
  const response = await fetch(`${baseUrl}/${VERSION}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json;charset=UTF-8' },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params, ...(cred ? { cred } : {}), apiKey: 'ignored-by-the-server' }),
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as RpcAnswer & { id: unknown };
  expect(body.id).toBe(id);
  if (body.error === undefined) await expectResultMatchesSchema(method, body.result);
  return body;
}

/** Asserts a documented application error: code, and a data.reason phrase. */
export function expectError(answer: RpcAnswer, code: number, reason?: string | RegExp): void {
  expect(answer.error, JSON.stringify(answer)).toBeDefined();
  expect(answer.error!.code).toBe(code);
  if (code !== -32602) expect(typeof answer.error!.data?.reason).toBe('string');
  if (reason !== undefined) expect(answer.error!.data?.reason).toMatch(reason);
}
