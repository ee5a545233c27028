import { UsageError } from '../../cli/kit.js';
import { isCallbackUrl } from './callback-url.js';

/** The options of the `clients` commands that name callback URLs and organizations, checked alike. */

const OID = /^[0-2](\.(0|[1-9][0-9]*))+$/;

/** Commander's collector for a repeatable option. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Each --callback-url must be the spec's CallbackUrl, so that a request can name it. */
export async function checkCallbackUrls(urls: readonly string[]): Promise<void> {
  for (const url of urls) {
    if (!(await isCallbackUrl(url)))
      throw new UsageError(`--callback-url "${url}" is not an http(s) base URL (host, optional port and path; no query or fragment)`);
  }
}

/** Each --organization must be an OID; --organization and --all-organizations exclude each other. */
export function checkOrganizations(organizations: readonly string[], allOrganizations: boolean | undefined): void {
  if (organizations.length > 0 && allOrganizations) throw new UsageError('give either --organization or --all-organizations, not both');
  for (const oid of organizations) if (!OID.test(oid)) throw new UsageError(`--organization "${oid}" is not an OID`);
}
