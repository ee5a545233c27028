import type { BusinessInfo, Doctor } from '../../../generated/ehr-types.js';
import type { LocationFragment, OrganizationFragment, PractitionerFragment, Ref } from '../mapping/fragments.ts';

/** A row of record_resources. */
export interface ResourceRow {
  id: string;
  source: string;
  resource_type: string;
  fhir_id: string;
  fragment: unknown;
}

/** What a reference resolved to: the resource's row (a shared one's fragment included). */
export interface Resolved {
  id: string;
  resource_type: string;
  fhir_id: string;
  fragment: unknown | null;
}

export type Resolver = (source: string, alias: string) => Resolved | undefined;

export const NO_DOCTOR: Doctor = { id: '', surname: '', name: '', specialization: { id: '', name: '' } };
export const NO_BUSINESS: BusinessInfo = { id: '', name: '', location: '', networkId: '' };

/**
 * One patient's resources and what their references name: the lookups every part of the assembly
 * makes (a resource's doctor, organization, place, encounter). A reference resolves only to a
 * resource of the type it must name.
 */
export class PatientResources {
  private readonly byId: Map<string, ResourceRow>;

  constructor(
    private readonly rows: readonly ResourceRow[],
    private readonly resolve: Resolver,
  ) {
    this.byId = new Map(rows.map((row) => [row.id, row]));
  }

  /** The patient's resources of a type, without those entered in error. */
  ofType<F>(type: string): Array<{ row: ResourceRow; fragment: F }> {
    return this.rows
      .filter((row) => row.resource_type === type && !(row.fragment as { hidden?: boolean }).hidden)
      .map((row) => ({ row, fragment: row.fragment as F }));
  }

  /** The patient's own resource of this row id. */
  row(id: string): ResourceRow | undefined {
    return this.byId.get(id);
  }

  /** The FHIR ids of the patient's resources, by row id (the order of items of the same instant). */
  fhirIds(): Map<string, string> {
    return new Map(this.rows.map((row) => [row.id, row.fhir_id]));
  }

  /** What `alias` (a reference of `row`) names, when it is a resource of `type`. */
  target(row: ResourceRow, alias: string | undefined, type: string): Resolved | undefined {
    if (!alias) return undefined;
    const found = this.resolve(row.source, alias);
    return found?.resource_type === type ? found : undefined;
  }

  /** A resolved resource's fragment: a shared one's came with it, a patient's own is among the rows. */
  fragmentOf<F>(resolved: Resolved | undefined): F | undefined {
    return resolved ? ((resolved.fragment ?? this.byId.get(resolved.id)?.fragment) as F | undefined) : undefined;
  }

  /** The patient's own resource of the given type that `alias` names, by row id. */
  ownTarget(row: ResourceRow, alias: string | undefined, type: string): ResourceRow | undefined {
    const resolved = this.target(row, alias, type);
    return resolved && this.byId.get(resolved.id);
  }

  /** The Encounter row a resource's encounter alias names, when it is this patient's. */
  encounterOf(row: ResourceRow, alias: string | undefined): string | undefined {
    return this.ownTarget(row, alias, 'Encounter')?.id;
  }

  /** A Practitioner reference as the SDK's Doctor; its display alone when it names no imported one. */
  doctor(row: ResourceRow, reference: Ref | undefined): Doctor | undefined {
    if (!reference) return undefined;
    const practitioner = this.target(row, reference.alias, 'Practitioner');
    const fragment = this.fragmentOf<PractitionerFragment>(practitioner);
    if (fragment) return { id: practitioner!.fhir_id, ...fragment.doctor };
    return reference.display ? { ...NO_DOCTOR, name: reference.display } : undefined;
  }

  /** An Organization reference as the SDK's BusinessInfo (its parent as the network); its display alone when it names no imported one. */
  organization(row: ResourceRow, reference: Ref | undefined): BusinessInfo | undefined {
    if (!reference) return undefined;
    const resolved = this.target(row, reference.alias, 'Organization');
    const fragment = this.fragmentOf<OrganizationFragment>(resolved);
    if (!fragment) return reference.display ? { ...NO_BUSINESS, name: reference.display } : undefined;
    const parent = fragment.partOf ? this.target(row, fragment.partOf.alias, 'Organization') : undefined;
    const parentFragment = this.fragmentOf<OrganizationFragment>(parent);
    return {
      id: fragment.oid ?? resolved!.fhir_id,
      name: fragment.name,
      location: fragment.address,
      networkId: parentFragment ? (parentFragment.oid ?? parent!.fhir_id) : '',
    };
  }

  /** Where a visit took place: its provider (else its Location's organization), with the Location's name and address. */
  business(row: ResourceRow, provider: Ref | undefined, locationRef: Ref | undefined): BusinessInfo {
    const location = this.fragmentOf<LocationFragment>(locationRef ? this.target(row, locationRef.alias, 'Location') : undefined);
    const found = this.organization(row, provider) ?? this.organization(row, location?.organization);
    const place = location ? [location.name, location.address].filter(Boolean).join(', ') : '';
    return { ...(found ?? NO_BUSINESS), ...(place ? { location: place } : {}) };
  }

  /** An organization that `reference` names when it names an imported Organization (a performer may be a Practitioner too). */
  performingOrganization(row: ResourceRow, reference: Ref | undefined): BusinessInfo | undefined {
    return reference && this.target(row, reference.alias, 'Organization') ? this.organization(row, reference) : undefined;
  }
}
