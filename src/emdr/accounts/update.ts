import type { Knex } from 'knex';
import { CALLBACK_USER } from './clients.js';

/**
 * Changes to an existing clinic account of interface B (`clients update`, and `seed-demo` for the
 * demo clinic): its callback URLs and the organizations it acts for. Callbacks not yet delivered to
 * a URL the account no longer has, and requests that will still call back, move to its new default
 * URL: a clinic that moved its receiver gets them there.
 */

export interface ClinicAccountChanges {
  businessId: string;
  /** Needed only when the businessId has several accounts. */
  user?: string;
  /** The new list (the first is the default); unchanged when absent. */
  callbackUrls?: readonly string[];
  /** The new list, or null for every organization; unchanged when absent. */
  organizations?: readonly string[] | null;
}

export interface UpdatedClinicAccount {
  businessId: string;
  user: string;
  callbackUrls: string[];
  organizations: string[] | null;
  /** The headers the gateway sends with every callback (the token is not shown again). */
  callbackUser: string;
  /** Undelivered callbacks and open requests moved to the new default URL. */
  moved: { callbacks: number; requests: number };
}

/** A businessId without an account, or with several when no user was named: a one-line refusal for the CLI. */
export class ClinicAccountChoiceError extends Error {}

const base = (url: string) => url.replace(/\/+$/, '');

/** Applies `changes` in one transaction. */
export async function updateClinicAccount(knex: Knex, changes: ClinicAccountChanges): Promise<UpdatedClinicAccount> {
  return knex.transaction(async (trx) => {
    const accounts = await trx('emdr_clients')
      .where({ business_id: changes.businessId, ...(changes.user === undefined ? {} : { user_name: changes.user }) })
      .select<Array<{ id: string; user_name: string; callback_urls: string[]; organizations: string[] | null }>>(
        'id',
        'user_name',
        'callback_urls',
        'organizations',
      )
      .forUpdate();
    if (accounts.length === 0)
      throw new ClinicAccountChoiceError(`no clinic account ${changes.businessId}${changes.user === undefined ? '' : `/${changes.user}`}`);
    if (accounts.length > 1)
      throw new ClinicAccountChoiceError(
        `businessId ${changes.businessId} has several accounts (${accounts.map((account) => account.user_name).join(', ')}): name one with --user`,
      );
    const account = accounts[0]!;
    const callbackUrls = changes.callbackUrls ? [...changes.callbackUrls] : account.callback_urls;
    const organizations = changes.organizations === undefined ? account.organizations : changes.organizations && [...changes.organizations];
    await trx('emdr_clients').where({ id: account.id }).update({ callback_urls: callbackUrls, organizations });
    const moved = changes.callbackUrls ? await moveToDefaultUrl(trx, account.id, callbackUrls) : { callbacks: 0, requests: 0 };
    return { businessId: changes.businessId, user: account.user_name, callbackUrls, organizations, callbackUser: CALLBACK_USER, moved };
  });
}

/** Undelivered callbacks and unfinished requests of the account whose base URL it no longer lists go to its default URL. */
async function moveToDefaultUrl(trx: Knex.Transaction, clientId: string, callbackUrls: readonly string[]): Promise<{ callbacks: number; requests: number }> {
  const kept = callbackUrls.map(base);
  const fallback = kept[0]!;
  const callbacks = await trx.raw<{ rowCount: number }>(
    `update emdr_callbacks c set url = ? || '/api/' || c.name
       from emdr_requests r
      where r.queue_message_id = c.queue_message_id and r.client_id = ?
        and c.state in ('waiting', 'pending', 'failed')
        and not (left(c.url, length(c.url) - length('/api/' || c.name)) = any(?::text[]))`,
    [fallback, clientId, kept],
  );
  const requests = await trx.raw<{ rowCount: number }>(
    `update emdr_requests set callback_url = ?
      where client_id = ? and state in ('received', 'accepted') and not (rtrim(callback_url, '/') = any(?::text[]))`,
    [fallback, clientId, kept],
  );
  return { callbacks: callbacks.rowCount, requests: requests.rowCount };
}
