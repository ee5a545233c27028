import type {
  AppointmentFilters,
  CountResult,
  DatePeriodFilter,
  HealthcheckResult,
  PatientByIdResult,
  PatientFilters,
  PatientInfo,
  PatientListResult,
  PrescriptionFilters,
} from '../../../generated/ehr-types.js';
import type { AuditTrail } from '../../audit/trail.js';
import type { Config } from '../../config/config.js';
import { statement, type Sql } from '../../db/sql.js';
import { RecordQueries, type BackOfficeFilters, type RecordEntity, type RecordScope } from '../../record/queries/queries.js';
import { toE164 } from '../../validation/phone.js';
import { birthDateOf, instantOf } from '../dates.js';
import { EhrErrors, invalidParam, itemNotFound } from '../errors.js';
import { PatientDirectory, type DirectoryFilters } from '../patients/patient-directory.js';
import { patientInfoOf, RecordAccess, type RecordCaller } from './record-access.js';
import { RpcError } from '../rpc/errors.js';
import type { CallContext, MethodHandler } from '../rpc/envelope.js';

/**
 * The medical record's methods of interface A (specs/openrpc.json, 2.1): for each kind of item its
 * by-id read, a patient's page and count, the back office's page and count; the back office's
 * patient methods; api_info.healthcheck. Access (RecordAccess) first, then the read
 * (RecordQueries, PatientDirectory); every call, answered or refused, leaves one audit row.
 */

export interface RecordMethodsDependencies {
  sql: Sql;
  config: Config;
  audit: AuditTrail;
  /** info.version of the OpenRPC document, for api_info.healthcheck. */
  version: string;
}

interface AuditDraft {
  internalUserId?: string | null;
  internalAccount?: string | null;
}

type Params = Record<string, unknown>;

/** The names of each kind of item on the wire. */
const ENTITIES: Record<RecordEntity, { plural: string; one: string; many: string; patientMember: 'patient' | 'patientInfo' }> = {
  appointment: { plural: 'appointments', one: 'appointment', many: 'appointments', patientMember: 'patient' },
  appointment_result: { plural: 'appointment_results', one: 'appointmentResult', many: 'appointmentResults', patientMember: 'patient' },
  diagnostic_report: { plural: 'diagnostic_reports', one: 'diagnosticReport', many: 'diagnosticReports', patientMember: 'patient' },
  prescription: { plural: 'prescriptions', one: 'prescription', many: 'prescriptions', patientMember: 'patientInfo' },
};

/** Cursor types of the peer's CountResponse. */
const GT_ID = 1;
const GT_CREATED = 3;

const EMPTY = { validationErrors: [], recognitionResults: [] };

function optionalText(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** An optional date-time param ('' and null count as absent); -32602 at `path` when it is no date-time. */
function instantParam(value: unknown, path: string): number | undefined {
  const text = optionalText(value);
  if (text === undefined) return undefined;
  const ms = instantOf(text);
  if (ms === undefined) throw invalidParam(path, 'is not a date-time');
  return ms;
}

function periodParam(filter: DatePeriodFilter | undefined, path: string): { from?: number; to?: number } {
  const from = instantParam(filter?.from, `${path}/from`);
  const to = instantParam(filter?.to, `${path}/to`);
  return { ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }) };
}

function paging(params: Params): { limit: number; offset: number } {
  return { limit: params.limit as number, offset: typeof params.offset === 'number' ? params.offset : 0 };
}

function outcomeOf(error: unknown): string {
  return error instanceof RpcError ? String(error.code) : 'error';
}

class RecordMethods {
  private readonly access: RecordAccess;
  private readonly queries: RecordQueries;
  private readonly directory: PatientDirectory;

  constructor(private readonly dependencies: RecordMethodsDependencies) {
    this.access = new RecordAccess(dependencies.sql);
    this.queries = new RecordQueries(dependencies.sql);
    this.directory = new PatientDirectory(dependencies.sql);
  }

  /** A handler whose call leaves one audit row, with what it learnt of who and whose. */
  audited(method: string, work: (params: Params, context: CallContext, draft: AuditDraft) => Promise<unknown>): MethodHandler {
    return async (params, context) => {
      const draft: AuditDraft = {};
      let outcome = 'ok';
      try {
        return await work(params, context, draft);
      } catch (error) {
        outcome = outcomeOf(error);
        throw error;
      } finally {
        await this.dependencies.audit
          .record({ action: method, outcome, internalUserId: draft.internalUserId ?? null, internalAccount: draft.internalAccount ?? null })
          .catch(() => undefined);
      }
    };
  }

  private async caller(context: CallContext, draft: AuditDraft): Promise<RecordCaller> {
    const caller = await this.access.patientCaller(context);
    if (caller.kind === 'user') draft.internalUserId = caller.patient.id;
    else draft.internalAccount = `apikey:${caller.key.id}`;
    return caller;
  }

  private async backOffice(context: CallContext, draft: AuditDraft) {
    const key = await this.access.backOfficeKey(context);
    draft.internalAccount = `apikey:${key.id}`;
    return key;
  }

  /** The patient a patient's method names, checked against the caller: -33403 when not visible. */
  private async patientScope(caller: RecordCaller, patientId: string, draft: AuditDraft): Promise<{ patientId: string; info?: PatientInfo }> {
    draft.internalUserId = patientId;
    if (caller.kind === 'user') {
      if (caller.patient.id !== patientId) throw EhrErrors.accessForbidden('access to this patient is forbidden');
      return { patientId, info: patientInfoOf(caller.patient) };
    }
    if (!(await this.queries.patientVisible(patientId, caller.key.organizations))) throw EhrErrors.accessForbidden('access to this patient is forbidden');
    return { patientId };
  }

  /** Messages with their patient attached (the stored ones carry none: the patient may change). */
  private async withPatients(
    entity: RecordEntity,
    items: Array<{ patient_id: string; message: Record<string, unknown> }>,
    known?: PatientInfo,
  ): Promise<Array<Record<string, unknown>>> {
    const member = ENTITIES[entity].patientMember;
    const infos = new Map<string, PatientInfo>(known ? [[known.id, known]] : []);
    const missing = [...new Set(items.map((item) => item.patient_id))].filter((id) => !infos.has(id));
    for (const [id, patient] of await this.directory.byIds(missing)) infos.set(id, patientInfoOf(patient));
    return items.filter((item) => infos.has(item.patient_id)).map((item) => ({ ...item.message, [member]: infos.get(item.patient_id) }));
  }

  byId(entity: RecordEntity, method: string): MethodHandler {
    return this.audited(method, async (params, context, draft) => {
      const caller = await this.caller(context, draft);
      const id = String(params.id);
      const scope: RecordScope = caller.kind === 'user' ? { patientId: caller.patient.id } : { organizations: caller.key.organizations };
      const item = await this.queries.byId(entity, id, scope);
      if (!item) throw itemNotFound(entity, method, id);
      draft.internalUserId = item.patient_id;
      const [message] = await this.withPatients(entity, [item], caller.kind === 'user' ? patientInfoOf(caller.patient) : undefined);
      if (!message) throw itemNotFound(entity, method, id);
      return { [ENTITIES[entity].one]: message, ...EMPTY };
    });
  }

  patientList(entity: RecordEntity, method: string): MethodHandler {
    return this.audited(method, async (params, context, draft) => {
      const caller = await this.caller(context, draft);
      const { patientId, info } = await this.patientScope(caller, params.patientId as string, draft);
      const after = instantParam(params.lastItemCreated, '/lastItemCreated');
      const messages = await this.queries.patientPage(entity, patientId, {
        ...paging(params),
        ...(after === undefined ? {} : { after }),
        newestFirst: params.orderByDescendingDate !== false,
      });
      const items = await this.withPatients(
        entity,
        messages.map((message) => ({ patient_id: patientId, message })),
        info,
      );
      return { [ENTITIES[entity].many]: items, ...EMPTY };
    });
  }

  patientCount(entity: RecordEntity, method: string): MethodHandler {
    return this.audited(method, async (params, context, draft) => {
      const caller = await this.caller(context, draft);
      const { patientId } = await this.patientScope(caller, params.patientId as string, draft);
      return { count: await this.queries.patientCount(entity, patientId), support: true, cursorType: GT_CREATED } satisfies CountResult;
    });
  }

  backOfficeList(entity: RecordEntity, method: string): MethodHandler {
    return this.audited(method, async (params, context, draft) => {
      const key = await this.backOffice(context, draft);
      const filters = this.itemFilters(entity, params.filters as (AppointmentFilters & PrescriptionFilters) | undefined);
      if (filters.patientId) draft.internalUserId = filters.patientId;
      const beforeCreated = instantParam(params.lastItemCreated, '/lastItemCreated');
      const lastItemId = params.lastItemId === null || params.lastItemId === undefined || params.lastItemId === '' ? undefined : String(params.lastItemId);
      if (lastItemId !== undefined && !/^[0-9]{1,18}$/.test(lastItemId)) throw invalidParam('/lastItemId', 'is not an id of this list');
      const rows = await this.queries.page(entity, key.organizations, {
        ...paging(params),
        ...(lastItemId === undefined ? {} : { afterId: lastItemId }),
        ...(beforeCreated === undefined ? {} : { beforeCreated }),
        filters,
      });
      return { [ENTITIES[entity].many]: await this.withPatients(entity, rows), ...EMPTY };
    });
  }

  private itemFilters(entity: RecordEntity, filters: (AppointmentFilters & PrescriptionFilters) | undefined): BackOfficeFilters {
    if (!filters) return {};
    const created = periodParam(filters.byCreated, '/filters/byCreated');
    const start = entity === 'appointment' || entity === 'appointment_result' ? periodParam(filters.byStart, '/filters/byStart') : {};
    const patientId = optionalText(filters.byPatient?.patientId);
    const businessId = optionalText(filters.byBusiness?.businessId);
    const cd10 = entity === 'prescription' ? (filters.byDiagnosisCd10?.cd10 ?? []).map((code) => code.trim()).filter(Boolean) : [];
    return {
      ...(patientId ? { patientId } : {}),
      ...(businessId ? { businessId } : {}),
      ...(created.from === undefined ? {} : { createdFrom: created.from }),
      ...(created.to === undefined ? {} : { createdTo: created.to }),
      ...(start.from === undefined ? {} : { startFrom: start.from }),
      ...(start.to === undefined ? {} : { startTo: start.to }),
      ...(cd10.length > 0 ? { cd10 } : {}),
    };
  }

  backOfficeCount(entity: RecordEntity, method: string): MethodHandler {
    return this.audited(method, async (_params, context, draft) => {
      const key = await this.backOffice(context, draft);
      return { count: await this.queries.count(entity, key.organizations), support: true, cursorType: GT_ID } satisfies CountResult;
    });
  }

  readonly patientById = this.audited('patient.get_patient_by_id', async (params, context, draft) => {
    const key = await this.backOffice(context, draft);
    draft.internalUserId = params.id as string;
    const patient = await this.directory.byId(key.organizations, params.id as string);
    if (!patient) throw EhrErrors.patientNotFound('no such patient');
    return { patient, validationErrors: [] } satisfies PatientByIdResult;
  });

  private patientPage(method: string, filtersOf: (params: Params) => DirectoryFilters): MethodHandler {
    return this.audited(method, async (params, context, draft) => {
      const key = await this.backOffice(context, draft);
      const lastItemId = optionalText(typeof params.lastItemId === 'number' ? String(params.lastItemId) : params.lastItemId);
      const patients = await this.directory.page(key.organizations, {
        ...paging(params),
        ...(lastItemId ? { afterId: lastItemId } : {}),
        filters: filtersOf(params),
      });
      return { patients } satisfies PatientListResult;
    });
  }

  private phoneParam(value: unknown, path: string): string | undefined {
    const text = optionalText(value);
    if (text === undefined) return undefined;
    const phone = toE164(text);
    if (!phone) throw invalidParam(path, 'is not a phone number');
    return phone;
  }

  private birthDateParam(value: unknown, path: string): string | undefined {
    const text = optionalText(value);
    if (text === undefined) return undefined;
    const date = birthDateOf(text, this.dependencies.config.birthDateTimeZone);
    if (!date) throw invalidParam(path, 'is not a date');
    return date;
  }

  readonly patients = this.patientPage('patient.get_patients', (params) => {
    const filters = (params.filters ?? {}) as PatientFilters;
    const words = optionalText(filters.byName?.name)?.split(/\s+/);
    const medcard = optionalText(filters.byMedCard?.medCardId);
    const phone = this.phoneParam(filters.byPhone?.phone, '/filters/byPhone/phone');
    const birthFrom = this.birthDateParam(filters.byBirthdate?.from, '/filters/byBirthdate/from');
    const birthTo = this.birthDateParam(filters.byBirthdate?.to, '/filters/byBirthdate/to');
    return {
      ...(words ? { nameWords: words } : {}),
      ...(medcard ? { medcardNumber: medcard } : {}),
      ...(phone ? { phone } : {}),
      ...(birthFrom ? { birthFrom } : {}),
      ...(birthTo ? { birthTo } : {}),
    };
  });

  readonly patientsByPhone = this.patientPage('patient.find_patients_by_phone', (params) => ({ phone: this.phoneParam(params.phone, '/phone')! }));

  readonly patientsByMedcard = this.patientPage('patient.find_patients_by_medcard', (params) => ({ medcardNumber: (params.medcardNumber as string).trim() }));

  readonly patientCountAll = this.audited('patient.count', async (_params, context, draft) => {
    const key = await this.backOffice(context, draft);
    return { count: await this.directory.count(key.organizations), support: true, cursorType: GT_ID } satisfies CountResult;
  });

  /** No credentials, no effect, no audit row: it reads nothing of anybody's. Answers healthy=false rather than an error when the database is down. */
  readonly healthcheck: MethodHandler = async () => {
    const within = <T>(work: Promise<T>) =>
      Promise.race([work, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), HEALTH_TIMEOUT_MS).unref())]);
    const embeddedStorageHealthy = await within(this.dependencies.sql.row(HEALTH_PROBE)).then(
      () => true,
      () => false,
    );
    const providerHealthy = embeddedStorageHealthy && (await within(this.queries.healthy()).catch(() => false));
    return {
      version: this.dependencies.version,
      serverHealthy: embeddedStorageHealthy && providerHealthy,
      embeddedStorageHealthy,
      providerHealthy,
      aggregatedHealthy: [],
    } satisfies HealthcheckResult;
  };
}

const HEALTH_TIMEOUT_MS = 2000;
const HEALTH_PROBE = statement('ehr_health_probe', 'select 1 as up');

/** The medical record's JSON-RPC methods by name. */
export function createRecordHandlers(dependencies: RecordMethodsDependencies): Record<string, MethodHandler> {
  const methods = new RecordMethods(dependencies);
  const handlers: Record<string, MethodHandler> = {
    'api_info.healthcheck': methods.healthcheck,
    'patient.get_patient_by_id': methods.patientById,
    'patient.get_patients': methods.patients,
    'patient.find_patients_by_phone': methods.patientsByPhone,
    'patient.find_patients_by_medcard': methods.patientsByMedcard,
    'patient.count': methods.patientCountAll,
  };
  for (const [entity, names] of Object.entries(ENTITIES) as Array<[RecordEntity, (typeof ENTITIES)[RecordEntity]]>) {
    const method = (name: string) => `${entity}.${name}`;
    handlers[method(`get_${entity}_by_id`)] = methods.byId(entity, method(`get_${entity}_by_id`));
    handlers[method(`get_patient_${names.plural}`)] = methods.patientList(entity, method(`get_patient_${names.plural}`));
    handlers[method(`patient_${names.plural}_count`)] = methods.patientCount(entity, method(`patient_${names.plural}_count`));
    handlers[method(`get_${names.plural}`)] = methods.backOfficeList(entity, method(`get_${names.plural}`));
    handlers[method('count')] = methods.backOfficeCount(entity, method('count'));
  }
  return handlers;
}
