import { setTimeout as sleep } from 'node:timers/promises';
import type { Knex } from 'knex';
import { instantMs } from '../instant.js';
import type { DocumentOwner, FetchOutcome, RegistrationInput, RegistrationOutcome, RegistryItem, RegistryPort, RegistrySearch } from './port.js';

export interface BuiltInRegistryOptions {
  latencyMs: number;
  /** Test switch: refuse every registration and file request with RUNTIME_ERROR. */
  fail: boolean;
}

const PG_UNIQUE_VIOLATION = '23505';

/** `current_version`: the row of the newest version of the document registered as `?` (its `superseded_by` chain followed). */
const CURRENT_VERSION = `
  chain as (
    select emdr_id, superseded_by, 0 as depth from emdr_registry_documents where emdr_id = ?
    union all
    select d.emdr_id, d.superseded_by, c.depth + 1 from emdr_registry_documents d join chain c on d.emdr_id = c.superseded_by
  ),
  current_version as (
    select d.* from emdr_registry_documents d where d.emdr_id = (select emdr_id from chain order by depth desc limit 1)
  )`;

function toItem(row: Record<string, unknown>): RegistryItem {
  return {
    emdrId: row.emdr_id as string,
    localUid: row.local_uid as string,
    kind: row.kind as string,
    organization: row.organization as string,
    registrationDateTime: (row.registration_date_time as Date).toISOString(),
    version: row.version as number,
  };
}

/**
 * The default registry: keeps registered documents in emdr_registry_documents of the service's own
 * database and acts as the providing archive too. emdrIds are `YY.MM.NNNNNNNNN` from a sequence;
 * a document that `replaces` the current version of another becomes its next version.
 */
export class BuiltInRegistry implements RegistryPort {
  constructor(
    private readonly knex: Knex,
    private readonly options: BuiltInRegistryOptions,
  ) {}

  private async delay(): Promise<void> {
    if (this.options.latencyMs > 0) await sleep(this.options.latencyMs);
  }

  async register(input: RegistrationInput): Promise<RegistrationOutcome> {
    await this.delay();
    if (this.options.fail) return { ok: false, errors: [{ code: 'RUNTIME_ERROR', message: 'the registry failed (REGISTRY_FAIL is set)' }] };
    const earlier = await this.knex('emdr_registry_documents').where({ request_key: input.requestKey }).first('emdr_id', 'registration_date_time', 'version');
    if (earlier) return { ok: true, emdrId: earlier.emdr_id, registrationDateTime: earlier.registration_date_time.toISOString(), version: earlier.version };
    try {
      return await this.knex.transaction(async (trx) => {
        let version = 1;
        if (input.replaces !== undefined) {
          const replaced = await trx('emdr_registry_documents').where({ emdr_id: input.replaces }).forUpdate().first('organization', 'superseded_by', 'version');
          // Another organization's document reads as an unknown one: emdrIds cannot be probed through replaces either.
          if (!replaced || replaced.organization !== input.organization) {
            return { ok: false, errors: [{ code: 'REGISTRY_ITEM_NOT_FOUND', message: 'the document named in replaces is not registered' }] };
          }
          if (replaced.superseded_by !== null) {
            return { ok: false, errors: [{ code: 'CANT_REG_VERSION', message: 'the document named in replaces is not the current version' }] };
          }
          version = replaced.version + 1;
        }
        const { rows } = await trx.raw<{ rows: Array<{ emdr_id: string; registration_date_time: Date }> }>(
          `insert into emdr_registry_documents
             (emdr_id, request_key, local_uid, kind, organization, patient_snils, document_number, creation_date_time,
              registration_date_time, version, replaces, file_name, content, signature, personal_signatures)
           select n.id, ?, ?, ?, ?, ?, ?, to_timestamp(? / 1000.0), now(), ?, ?, n.id || '.xml', r.document, r.signature, r.personal_signatures
             from (select to_char(now(), 'YY.MM.') || lpad(nextval('emdr_registry_number')::text, 9, '0') as id) n,
                  emdr_requests r
            where r.queue_message_id = ?::uuid
           returning emdr_id, registration_date_time`,
          [
            input.requestKey,
            input.localUid,
            input.kind,
            input.organization,
            input.patientSnils,
            input.documentNumber ?? null,
            instantMs(input.creationDateTime),
            version,
            input.replaces ?? null,
            input.requestKey,
          ],
        );
        if (rows.length === 0) throw new Error(`no gateway request ${input.requestKey} to take the files from`);
        const row = rows[0]!;
        if (input.replaces !== undefined) await trx('emdr_registry_documents').where({ emdr_id: input.replaces }).update({ superseded_by: row.emdr_id });
        return { ok: true as const, emdrId: row.emdr_id, registrationDateTime: row.registration_date_time.toISOString(), version };
      });
    } catch (error) {
      if ((error as { code?: string }).code === PG_UNIQUE_VIOLATION && (error as { constraint?: string }).constraint?.includes('local_uid')) {
        return { ok: false, errors: [{ code: 'NOT_UNIQUE_PROVIDED_ID', message: 'a document with this localUid is already registered for the organization' }] };
      }
      throw error;
    }
  }

  async currentVersionOwner(emdrId: string): Promise<DocumentOwner | undefined> {
    await this.delay();
    const { rows } = await this.knex.raw<{ rows: Array<{ organization: string; patient_snils: string }> }>(
      `with recursive ${CURRENT_VERSION} select organization, patient_snils from current_version`,
      [emdrId],
    );
    const row = rows[0];
    return row && { organization: row.organization, patientSnils: row.patient_snils };
  }

  async fetchCurrentVersion(emdrId: string, requestKey: string): Promise<FetchOutcome> {
    await this.delay();
    if (this.options.fail) return { ok: false, errors: [{ code: 'RUNTIME_ERROR', message: 'the registry failed (REGISTRY_FAIL is set)' }] };
    const { rows } = await this.knex.raw<{ rows: Array<Record<string, unknown>> }>(
      `with recursive ${CURRENT_VERSION},
       stored as (
         update emdr_requests r set document = v.content, signature = v.signature
           from current_version v
          where r.queue_message_id = ?::uuid
       )
       select emdr_id, local_uid, kind, version, file_name, organization, patient_snils from current_version`,
      [emdrId, requestKey],
    );
    const row = rows[0];
    if (!row) return { ok: false, errors: [{ code: 'REGISTRY_ITEM_NOT_FOUND', message: 'no registry item with this emdrId' }] };
    return {
      ok: true,
      file: {
        emdrId: row.emdr_id as string,
        localUid: row.local_uid as string,
        kind: row.kind as string,
        version: row.version as number,
        fileName: row.file_name as string,
        organization: row.organization as string,
        patientSnils: row.patient_snils as string,
      },
    };
  }

  async search(criteria: RegistrySearch): Promise<RegistryItem[]> {
    await this.delay();
    const query = this.knex('emdr_registry_documents')
      .select('emdr_id', 'local_uid', 'kind', 'organization', 'registration_date_time', 'version')
      .orderBy('registration_date_time', 'desc')
      .limit(criteria.limit);
    if (criteria.patientSnils !== undefined) query.where('patient_snils', criteria.patientSnils);
    if (criteria.kind !== undefined) query.where('kind', criteria.kind);
    if (criteria.organization !== undefined) query.where('organization', criteria.organization);
    if (criteria.localUid !== undefined) query.where('local_uid', criteria.localUid);
    if (criteria.registerDateBegin !== undefined) query.where('registration_date_time', '>=', this.knex.raw('to_timestamp(? / 1000.0)', [instantMs(criteria.registerDateBegin)]));
    if (criteria.registerDateEnd !== undefined) query.where('registration_date_time', '<', this.knex.raw('to_timestamp(? / 1000.0)', [instantMs(criteria.registerDateEnd)]));
    if (criteria.organizations !== undefined) query.whereIn('organization', [...criteria.organizations]);
    return (await query).map(toItem);
  }
}
