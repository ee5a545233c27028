// In a module of their own: the intake and the CLI announce work without loading the workers.

/** The NOTIFY channel on which processes announce new work of interface B to the workers. */
export const WORK_CHANNEL = 'ehr_gateway_emdr_work';
/**
 * What a notification on WORK_CHANNEL announces: new requests (the acceptance stage's work) or
 * callbacks due (the delivery stage's); any other payload, an empty one included, wakes every stage.
 */
export const WORK = { requests: 'requests', callbacks: 'callbacks' } as const;
