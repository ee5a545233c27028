import fs from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { openApiSpecPath } from '../../config/paths.js';
import { createJsonSchemaAjv } from '../../validation/json-schema.js';

let validate: ((url: string) => boolean) | undefined;

/**
 * Whether `url` may be registered as a clinic's callback URL: the spec's `CallbackUrl` schema,
 * the one a request's `callbackUrl` must match, so that every registered URL can also be named in
 * a request (and reads as an RFC 3986 URI in `GET /api/messages/{id}`).
 */
export function isCallbackUrl(url: string): boolean {
  if (!validate) {
    const document = parseYaml(fs.readFileSync(openApiSpecPath, 'utf8')) as { components: { schemas: { CallbackUrl: object } } };
    validate = createJsonSchemaAjv().compile<string>(document.components.schemas.CallbackUrl);
  }
  return validate(url);
}
