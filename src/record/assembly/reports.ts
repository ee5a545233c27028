import type { Doctor } from '../../../generated/ehr-types.js';
import type { DiagnosticReportFragment, ObservationFragment } from '../mapping/fragments.ts';
import type { Encounters } from './encounters.js';
import type { DiagnosticReportBody, Item } from './items.js';
import { NO_BUSINESS, type PatientResources } from './patient-resources.js';

/**
 * A patient's diagnostic reports with their Observations; which Observations they hold is returned
 * too (an encounter's result lists only the others).
 */
export function assembleReports(
  resources: PatientResources,
  encounters: Encounters,
  patientId: string,
): { reports: Array<Item<DiagnosticReportBody>>; inReports: Set<string> } {
  const inReports = new Set<string>();
  const reports = resources.ofType<DiagnosticReportFragment>('DiagnosticReport').map(({ row, fragment }): Item<DiagnosticReportBody> => {
    const encounterId = resources.encounterOf(row, fragment.encounter);
    const result = fragment.results.flatMap((alias) => {
      const observation = resources.ownTarget(row, alias, 'Observation');
      if (!observation || (observation.fragment as ObservationFragment).hidden) return [];
      inReports.add(observation.id);
      return [(observation.fragment as ObservationFragment).observation];
    });
    const interpreters = fragment.interpreters.map((reference) => resources.doctor(row, reference)).filter((value): value is Doctor => value !== undefined);
    const performingDoctors = fragment.performers
      .filter((reference) => resources.target(row, reference.alias, 'Practitioner'))
      .map((reference) => resources.doctor(row, reference)!);
    const performingOrganization = fragment.performers.map((reference) => resources.performingOrganization(row, reference)).find(Boolean);
    const business = performingOrganization ?? encounters.businessOf(encounterId) ?? NO_BUSINESS;
    const begin = fragment.effective.start ?? fragment.at;
    const message: DiagnosticReportBody = {
      id: row.id,
      status: fragment.status,
      business,
      patientId,
      type: fragment.laboratory ? 2 : 1,
      category: fragment.category,
      effectivePeriod: { begin, end: fragment.effective.end ?? begin },
      issuedDate: fragment.at,
      result,
      resultInterpreter: interpreters.length > 0 ? interpreters : performingDoctors,
      resultInterpretation: fragment.conclusion,
      imagineMedia: [],
      attachments: fragment.attachments,
      services: fragment.services,
      appointmentResultId: encounters.resultIdOf(encounterId),
    };
    return { id: row.id, created: fragment.at, businessId: business.id, message };
  });
  return { reports, inReports };
}
