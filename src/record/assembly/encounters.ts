import type { BusinessInfo, Diagnosis } from '../../../generated/ehr-types.js';
import type { ConditionFragment, EncounterFragment } from '../mapping/fragments.ts';
import type { PatientResources, ResourceRow } from './patient-resources.js';

/**
 * A patient's encounters, which every other item may belong to: where each took place, and which
 * are finished (a finished encounter has its appointment result, of the encounter's own id).
 */
export class Encounters {
  readonly all: Array<{ row: ResourceRow; fragment: EncounterFragment }>;
  private readonly finished: Set<string>;
  private readonly businesses: Map<string, BusinessInfo>;
  private readonly starts: Map<string, string>;

  constructor(resources: PatientResources) {
    this.all = resources.ofType<EncounterFragment>('Encounter');
    this.finished = new Set(this.all.filter(({ fragment }) => fragment.status === 'finished').map(({ row }) => row.id));
    this.businesses = new Map(this.all.map(({ row, fragment }) => [row.id, resources.business(row, fragment.serviceProvider, fragment.location)]));
    this.starts = new Map(this.all.map(({ row, fragment }) => [row.id, fragment.at]));
  }

  isFinished(encounterId: string): boolean {
    return this.finished.has(encounterId);
  }

  /** The appointment result an item belongs to: its encounter's, once finished; '' otherwise. */
  resultIdOf(encounterId: string | undefined): string {
    return encounterId && this.finished.has(encounterId) ? encounterId : '';
  }

  businessOf(encounterId: string | undefined): BusinessInfo | undefined {
    return encounterId ? this.businesses.get(encounterId) : undefined;
  }

  startOf(encounterId: string): string | undefined {
    return this.starts.get(encounterId);
  }
}

/** A Condition as a diagnosis: of kind `kind`; type 2 when it began before the encounter, 1 an active problem, else 0. */
export function diagnosisOf(row: ResourceRow, fragment: ConditionFragment, kind: 0 | 2, encounterStart?: string): Diagnosis {
  let type: 0 | 1 | 2 = 0;
  if (fragment.onset && encounterStart && fragment.onset < encounterStart) type = 2;
  else if (fragment.chronicProblem) type = 1;
  return { id: row.fhir_id, cd10: fragment.cd10, diagnosisText: fragment.text, kind, type };
}
