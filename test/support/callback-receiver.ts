import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import fs from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { openApiSpecPath } from '../../src/config/paths.js';
import { startClinicReceiver, type ClinicReceiver, type ClinicReceiverOptions } from '../../examples/clinic-receiver/receiver.js';

export { SUCCESS, type ReceivedCallback, type Reply } from '../../examples/clinic-receiver/receiver.js';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** The callback payload schemas of specs/openapi.yaml, by callback name, compiled once. */
const callbackValidators: Map<string, ValidateFunction> = (() => {
  const document = parseYaml(fs.readFileSync(openApiSpecPath, 'utf8')) as { components: { schemas: Record<string, unknown> } };
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addSchema({ $id: 'openapi', components: document.components });
  const names = ['SendRegisterDocumentResponse', 'SendRegisterDocumentResultResponse', 'SendDemandContentResponse', 'SendDocumentFileResultResponse'];
  return new Map(names.map((name) => [name, ajv.compile({ $ref: `openapi#/components/schemas/${name}` })]));
})();

export interface CallbackReceiver extends ClinicReceiver {
  /** Every callback body that broke its schema in specs/openapi.yaml (a live contract check). */
  schemaViolations: string[];
}

/**
 * The reference clinic receiver of examples/ on loopback, with a live contract check: each
 * callback body is validated against its schema in specs/openapi.yaml.
 */
export async function startCallbackReceiver(options: ClinicReceiverOptions = {}): Promise<CallbackReceiver> {
  const schemaViolations: string[] = [];
  const receiver = await startClinicReceiver({
    ...options,
    onReceive: (callback) => {
      const validate = callbackValidators.get(callback.name);
      if (!validate) schemaViolations.push(`${callback.name}: not a callback of the spec`);
      else if (!validate(callback.body)) schemaViolations.push(`${callback.name}: ${JSON.stringify(validate.errors)}`);
      options.onReceive?.(callback);
    },
  });
  return Object.assign(receiver, { schemaViolations });
}
