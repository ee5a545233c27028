import fs from 'node:fs/promises';
import { openApiSpecPath } from '../../config/paths.js';

let validate: ((url: string) => boolean) | undefined;

/**
 * Whether `url` may be registered as a clinic's callback URL: the spec's `CallbackUrl` schema,
 * the one a request's `callbackUrl` must match, so that every registered URL can also be named in
 * a request (and reads as an RFC 3986 URI in `GET /api/messages/{id}`). The spec's parser and the
 * schema compiler load on the first call: the CLI's commands that never check a URL start without them.
 */
export async function isCallbackUrl(url: string): Promise<boolean> {
  if (!validate) {
    const [{ parse: parseYaml }, { createJsonSchemaAjv }] = await Promise.all([import('yaml'), import('../../validation/json-schema.js')]);
    const document = parseYaml(await fs.readFile(openApiSpecPath, 'utf8')) as { components: { schemas: { CallbackUrl: object } } };
    validate = createJsonSchemaAjv().compile<string>(document.components.schemas.CallbackUrl);
  }
  return validate(url);
}
