import { startClinicReceiver, type ClinicReceiver, type ClinicReceiverOptions } from '../../examples/clinic-receiver/receiver.js';
import { callbackProblems } from './contract.js';

export { SUCCESS, type ReceivedCallback, type Reply } from '../../examples/clinic-receiver/receiver.js';

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
      schemaViolations.push(...callbackProblems(callback.name, callback.body));
      options.onReceive?.(callback);
    },
  });
  return Object.assign(receiver, { schemaViolations });
}
