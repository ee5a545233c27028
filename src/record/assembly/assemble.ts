import { Encounters } from './encounters.js';
import { spreadCreated, type AssembledRecord } from './items.js';
import { PatientResources, type ResourceRow, type Resolver } from './patient-resources.js';
import { assemblePrescriptions } from './prescriptions.js';
import { assembleReports } from './reports.js';
import { assembleVisits, encounterParts } from './visits.js';

export type { AssembledRecord } from './items.js';
export type { Resolved, ResourceRow } from './patient-resources.js';

/**
 * One patient's fragments stitched into the four kinds of item the SDK's apps list. Pure: the
 * caller loads the patient's rows and what their references name (store.ts), and stores what this
 * returns. Messages carry no patient: the reads attach it (it may change).
 */
export function assemblePatient(patientId: string, rows: readonly ResourceRow[], resolve: Resolver): AssembledRecord {
  const resources = new PatientResources(rows, resolve);
  const encounters = new Encounters(resources);
  const { reports, inReports } = assembleReports(resources, encounters, patientId);
  const { prescriptions, infos } = assemblePrescriptions(resources, encounters, patientId);
  const parts = encounterParts(resources, encounters, { inReports, prescriptionInfos: infos });
  const { appointments, results } = assembleVisits(resources, encounters, parts, patientId);
  // Within one list no two items share a created: the keyset neither skips nor repeats.
  const order = resources.fhirIds();
  spreadCreated(appointments, order, (message, created) => (message.created = created));
  spreadCreated(results, order, (message, created) => (message.created = created));
  spreadCreated(reports, order, (message, created) => (message.issuedDate = created));
  spreadCreated(prescriptions, order, (message, created) => (message.created = created));
  return { appointments, results, reports, prescriptions };
}
