/**
 * FHIR references as aliases: one text per way a reference may name a resource, so that every
 * reference resolves with one lookup in record_aliases (per source), whichever form it takes:
 * - `Type/id`, also from an absolute URL (`https://…/fhir/Type/id`, a `_history` suffix dropped);
 * - the entry's fullUrl as written (`urn:uuid:…` in Synthea's transaction Bundles);
 * - `Type?identifier=system|value`: a conditional reference, one alias per identifier.
 */

const MAX_ALIAS_LENGTH = 1024;
const RELATIVE = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/;
const ABSOLUTE = /^https?:\/\/.+\/([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/;

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The alias a reference names, or undefined for one that cannot name an imported resource (contained `#…`, other searches). */
export function referenceAlias(reference: unknown): string | undefined {
  if (typeof reference !== 'string' || reference === '' || reference.length > MAX_ALIAS_LENGTH || reference.includes('\n')) return undefined;
  if (reference.startsWith('urn:')) return reference;
  const question = reference.indexOf('?');
  if (question > 0) {
    const type = reference.slice(0, question);
    const query = new URLSearchParams(reference.slice(question + 1));
    const identifier = query.get('identifier');
    if (!/^[A-Z][A-Za-z]+$/.test(type) || identifier === null || [...query.keys()].length !== 1) return undefined;
    return identifierAlias(type, decode(identifier));
  }
  const match = RELATIVE.exec(reference) ?? ABSOLUTE.exec(reference);
  return match ? `${match[1]}/${match[2]}` : undefined;
}

/** The alias of a Reference element ({reference}); undefined when absent or unresolvable. */
export function aliasOf(element: unknown): string | undefined {
  return typeof element === 'object' && element !== null ? referenceAlias((element as { reference?: unknown }).reference) : undefined;
}

function identifierAlias(type: string, systemAndValue: string): string {
  return `${type}?identifier=${systemAndValue}`;
}

/** Every alias under which `resource` may be referenced. */
export function aliasesOf(resource: { resourceType: string; id: string; identifier?: unknown }, fullUrl: string | undefined): string[] {
  const aliases = new Set([`${resource.resourceType}/${resource.id}`]);
  if (fullUrl && fullUrl.length <= MAX_ALIAS_LENGTH && !fullUrl.includes('\n')) {
    aliases.add(fullUrl);
    const fromUrl = referenceAlias(fullUrl);
    if (fromUrl) aliases.add(fromUrl);
  }
  if (Array.isArray(resource.identifier)) {
    for (const identifier of resource.identifier as Array<{ system?: unknown; value?: unknown }>) {
      if (typeof identifier?.system !== 'string' || typeof identifier.value !== 'string') continue;
      const alias = identifierAlias(resource.resourceType, `${identifier.system}|${identifier.value}`);
      if (alias.length <= MAX_ALIAS_LENGTH && !alias.includes('\n')) aliases.add(alias);
    }
  }
  return [...aliases];
}
