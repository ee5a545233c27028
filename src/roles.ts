/** What `serve` runs: interface A (ehr), interface B (emdr), the background workers (worker); `serve --only X` one of them. */
export const ROLES = ['ehr', 'emdr', 'worker'] as const;
export type Role = (typeof ROLES)[number];
