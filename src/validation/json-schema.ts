import { Ajv2020, type ErrorObject, type Options } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/**
 * The validator both specs need: JSON Schema 2020-12 (OpenAPI 3.1 and our OpenRPC schemas) with
 * formats, every error reported, and no complaints about OpenAPI/OpenRPC keywords it does not know.
 */
export function createJsonSchemaAjv(options: Options = {}): Ajv2020 {
  return addFormats(new Ajv2020({ ...options, strict: false, allErrors: true }));
}

/** The JSON pointer an error is about, down to the missing or unexpected member. */
export function errorPath(error: ErrorObject): string {
  const missing = error.keyword === 'required' ? `/${(error.params as { missingProperty: string }).missingProperty}` : '';
  const extra = error.keyword === 'additionalProperties' ? `/${(error.params as { additionalProperty: string }).additionalProperty}` : '';
  return `${error.instancePath}${missing}${extra}` || '/';
}

/** At most this many schema errors are reported in an answer (the first ones): a body full of mistakes must not make a larger answer. */
export const MAX_REPORTED_ERRORS = 20;

/** The errors an answer reports: at most MAX_REPORTED_ERRORS, never spread into a call's arguments (a million of them would overflow the stack). */
export function reportedErrors(errors: readonly ErrorObject[] | null | undefined): ErrorObject[] {
  return errors ? errors.slice(0, MAX_REPORTED_ERRORS) : [];
}
