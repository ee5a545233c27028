import type { AppointmentMessage, AppointmentResultMessage, DiagnosticReportMessage, PrescriptionMessage } from '../../../generated/ehr-types.js';

/** The four kinds of item the SDK's apps list, as the assembly makes them and store.ts keeps them. */

export type AppointmentBody = Omit<AppointmentMessage, 'patient'>;
export type AppointmentResultBody = Omit<AppointmentResultMessage, 'patient'>;
export type DiagnosticReportBody = Omit<DiagnosticReportMessage, 'patient'>;
export type PrescriptionBody = Omit<PrescriptionMessage, 'patientInfo'>;

export interface Item<M> {
  id: string;
  /** The keyset: unique within the patient's list. */
  created: string;
  start?: string;
  businessId: string;
  cd10?: string[];
  message: M;
}

export interface AssembledRecord {
  appointments: Array<Item<AppointmentBody>>;
  results: Array<Item<AppointmentResultBody>>;
  reports: Array<Item<DiagnosticReportBody>>;
  prescriptions: Array<Item<PrescriptionBody>>;
}

/** Items of one list whose keyset instants coincide are placed 1 ms apart, in the order of their source ids. */
export function spreadCreated<M>(items: Array<Item<M>>, order: Map<string, string>, setCreated: (message: M, created: string) => void): void {
  items.sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : (order.get(a.id) ?? '') < (order.get(b.id) ?? '') ? -1 : 1));
  let previous = -Infinity;
  for (const item of items) {
    const at = Math.max(Date.parse(item.created), previous + 1);
    if (at !== Date.parse(item.created)) {
      item.created = new Date(at).toISOString();
      setCreated(item.message, item.created);
    }
    previous = at;
  }
}
