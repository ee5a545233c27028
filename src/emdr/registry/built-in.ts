import { setTimeout as sleep } from 'node:timers/promises';
import { statement, type Sql } from '../../db/sql.js';
import { instantMs } from '../instant.js';
import type { DocumentOwner, FetchOutcome, RegistrationInput, RegistrationOutcome, RegistryItem, RegistryPort, RegistrySearch } from './port.js';

export interface BuiltInRegistryOptions {
  latencyMs: number;
  /** Test switch: refuse every registration and file request with RUNTIME_ERROR. */
  fail: boolean;
}

const PG_UNIQUE_VIOLATION = '23505';

/** `current_version`: the row of the newest version of the document registered as `$1` (its `superseded_by` chain followed). */
const CURRENT_VERSION = `
  chain as (
    select emdr_id, superseded_by, 0 as depth from emdr_registry_documents where emdr_id = $1
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
/** Registers a document with the files of gateway request $1 = $10 (copied by the database); nothing when that request registered one already. */
const INSERT_DOCUMENT = statement(
  'registry_insert_document',
  `insert into emdr_registry_documents
     (emdr_id, request_key, local_uid, kind, organization, patient_snils, document_number, creation_date_time,
      registration_date_time, version, replaces, file_name, content, signature, personal_signatures)
   select n.id, $1, $2, $3, $4, $5, $6, to_timestamp($7 / 1000.0), now(), $8, $9, n.id || '.xml', r.document, r.signature, r.personal_signatures
     from (select to_char(now(), 'YY.MM.') || lpad(nextval('emdr_registry_number')::text, 9, '0') as id) n,
          emdr_requests r
    where r.queue_message_id = $10::uuid
   on conflict (request_key) do nothing
   returning emdr_id, registration_date_time`,
);
const EARLIER = statement('registry_earlier', 'select emdr_id, registration_date_time, version from emdr_registry_documents where request_key = $1');
const LOCK_REPLACED = statement('registry_lock_replaced', 'select organization, superseded_by, version from emdr_registry_documents where emdr_id = $1 for update');
const SUPERSEDE = statement('registry_supersede', 'update emdr_registry_documents set superseded_by = $2 where emdr_id = $1');
const OWNER = statement('registry_current_owner', `with recursive ${CURRENT_VERSION} select organization, patient_snils from current_version`);
const FETCH = statement(
  'registry_fetch_current',
  `with recursive ${CURRENT_VERSION},
   stored as (
     update emdr_requests r set document = v.content, signature = v.signature
       from current_version v
      where r.queue_message_id = $2::uuid
   )
   select emdr_id, local_uid, kind, version, file_name, organization, patient_snils from current_version`,
);
const SEARCH = statement(
  'registry_search',
  `select emdr_id, local_uid, kind, organization, registration_date_time, version from emdr_registry_documents
    where ($1::text is null or patient_snils = $1) and ($2::text is null or kind = $2) and ($3::text is null or organization = $3)
      and ($4::uuid is null or local_uid = $4)
      and ($5::float8 is null or registration_date_time >= to_timestamp($5 / 1000.0))
      and ($6::float8 is null or registration_date_time < to_timestamp($6 / 1000.0))
      and ($7::text[] is null or organization = any($7))
    order by registration_date_time desc limit $8`,
);

type Registered = { emdr_id: string; registration_date_time: Date };

/**
 * The default registry: keeps registered documents in emdr_registry_documents of the service's own
 * database and acts as the providing archive too. emdrIds are `YY.MM.NNNNNNNNN` from a sequence;
 * a document that `replaces` the current version of another becomes its next version.
 */
export class BuiltInRegistry implements RegistryPort {
  constructor(
    private readonly sql: Sql,
    private readonly options: BuiltInRegistryOptions,
  ) {}

  private async delay(): Promise<void> {
    if (this.options.latencyMs > 0) await sleep(this.options.latencyMs);
  }

  private insertValues(input: RegistrationInput, version: number): unknown[] {
    return [input.requestKey, input.localUid, input.kind, input.organization, input.patientSnils, input.documentNumber ?? null, instantMs(input.creationDateTime), version, input.replaces ?? null, input.requestKey];
  }

  async register(input: RegistrationInput): Promise<RegistrationOutcome> {
    await this.delay();
    if (this.options.fail) return { ok: false, errors: [{ code: 'RUNTIME_ERROR', message: 'the registry failed (REGISTRY_FAIL is set)' }] };
    try {
      const registered = input.replaces === undefined ? await this.sql.row<Registered>(INSERT_DOCUMENT, this.insertValues(input, 1)) : await this.registerVersion(input);
      if (registered && 'ok' in registered) return registered;
      if (registered) return { ok: true, emdrId: registered.emdr_id, registrationDateTime: registered.registration_date_time.toISOString(), version: 1 };
      // Registered for this request before (a retry): the first result.
      const earlier = (await this.sql.row<Registered & { version: number }>(EARLIER, [input.requestKey]))!;
      return { ok: true, emdrId: earlier.emdr_id, registrationDateTime: earlier.registration_date_time.toISOString(), version: earlier.version };
    } catch (error) {
      if ((error as { code?: string }).code === PG_UNIQUE_VIOLATION && (error as { constraint?: string }).constraint?.includes('local_uid')) {
        return { ok: false, errors: [{ code: 'NOT_UNIQUE_PROVIDED_ID', message: 'a document with this localUid is already registered for the organization' }] };
      }
      throw error;
    }
  }

  /** A new version of the document named in `replaces`, which must be the current version of the same organization. */
  private registerVersion(input: RegistrationInput): Promise<(Registered & { version?: number }) | RegistrationOutcome | undefined> {
    return this.sql.transaction(async (trx) => {
      const earlier = await trx.row<Registered & { version: number }>(EARLIER, [input.requestKey]);
      if (earlier) return { ok: true as const, emdrId: earlier.emdr_id, registrationDateTime: earlier.registration_date_time.toISOString(), version: earlier.version };
      const replaced = await trx.row<{ organization: string; superseded_by: string | null; version: number }>(LOCK_REPLACED, [input.replaces]);
      // Another organization's document reads as an unknown one: emdrIds cannot be probed through replaces either.
      if (!replaced || replaced.organization !== input.organization) {
        return { ok: false as const, errors: [{ code: 'REGISTRY_ITEM_NOT_FOUND' as const, message: 'the document named in replaces is not registered' }] };
      }
      if (replaced.superseded_by !== null) return { ok: false as const, errors: [{ code: 'CANT_REG_VERSION' as const, message: 'the document named in replaces is not the current version' }] };
      const version = replaced.version + 1;
      const row = await trx.row<Registered>(INSERT_DOCUMENT, this.insertValues(input, version));
      if (!row) throw new Error(`no gateway request ${input.requestKey} to take the files from`);
      await trx.run(SUPERSEDE, [input.replaces, row.emdr_id]);
      return { ok: true as const, emdrId: row.emdr_id, registrationDateTime: row.registration_date_time.toISOString(), version };
    });
  }

  async currentVersionOwner(emdrId: string): Promise<DocumentOwner | undefined> {
    await this.delay();
    const row = await this.sql.row<{ organization: string; patient_snils: string }>(OWNER, [emdrId]);
    return row && { organization: row.organization, patientSnils: row.patient_snils };
  }

  async fetchCurrentVersion(emdrId: string, requestKey: string): Promise<FetchOutcome> {
    await this.delay();
    if (this.options.fail) return { ok: false, errors: [{ code: 'RUNTIME_ERROR', message: 'the registry failed (REGISTRY_FAIL is set)' }] };
    const row = await this.sql.row<Record<string, unknown>>(FETCH, [emdrId, requestKey]);
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
    const rows = await this.sql.rows<Record<string, unknown>>(SEARCH, [
      criteria.patientSnils ?? null,
      criteria.kind ?? null,
      criteria.organization ?? null,
      criteria.localUid ?? null,
      criteria.registerDateBegin === undefined ? null : instantMs(criteria.registerDateBegin),
      criteria.registerDateEnd === undefined ? null : instantMs(criteria.registerDateEnd),
      criteria.organizations === undefined ? null : [...criteria.organizations],
      criteria.limit,
    ]);
    return rows.map(toItem);
  }
}
