/** The sequence diagrams of the getting-started page: sources src/docs/flows/<id>.mmd, built to dist/docs/flows/<id>.svg. */
export const FLOWS = [
  { id: 'interface-a', title: 'Interface A: authorization server, patient app and EHR server' },
  { id: 'interface-b', title: 'Interface B: clinic, gateway and registry, with both callbacks and their retries' },
] as const;
