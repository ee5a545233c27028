/**
 * Text PostgreSQL can store as it came: well-formed Unicode without NUL characters. PostgreSQL
 * refuses a NUL (its error text then quotes the value); node-postgres replaces a lone UTF-16
 * surrogate with U+FFFD, so two different values would be stored as one.
 */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE_CHARACTER.test(text);
}

/** In unicode mode a surrogate range matches only surrogates that are not part of a pair. */
const UNSTORABLE_CHARACTER = /[\u0000\uD800-\uDFFF]/u;
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

export const UNSTORABLE_TEXT = 'contains a NUL character or a lone surrogate';

/** A lone UTF-16 surrogate (JSON may escape one, `"\ud800"`): not Unicode text at all. */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/** At most this many places are reported: a body full of bad strings must not make a larger answer. */
const MAX_REPORTED = 20;

interface Visit {
  node: unknown;
  parent?: Visit;
  segment?: string;
}

/** A node's JSON pointer, built only for what is reported (a pointer per node of a deep body would be quadratic). */
function pointerOf(visit: Visit): string {
  const segments: string[] = [];
  for (let at: Visit | undefined = visit; at?.segment !== undefined; at = at.parent) segments.push(at.segment);
  return (
    segments
      .reverse()
      .map((segment) => `/${segment.replaceAll('~', '~0').replaceAll('/', '~1')}`)
      .join('') || '/'
  );
}

/**
 * JSON pointers (RFC 6901, sorted) of the strings in `value` that `isBad` flags, at most
 * MAX_REPORTED; walks without recursion, however deep the value nests.
 */
export function textPaths(value: unknown, isBad: (text: string) => boolean): string[] {
  const paths: string[] = [];
  const pending: Visit[] = [{ node: value }];
  while (pending.length > 0 && paths.length < MAX_REPORTED) {
    const visit = pending.pop()!;
    if (typeof visit.node === 'string') {
      if (isBad(visit.node)) paths.push(pointerOf(visit));
    } else if (visit.node !== null && typeof visit.node === 'object') {
      for (const [key, inner] of Object.entries(visit.node)) pending.push({ node: inner, parent: visit, segment: key });
    }
  }
  return paths.sort();
}

/** Whether any string in `value` is flagged by `isBad` (the common answer, no, without building a path). */
function anyText(value: unknown, isBad: (text: string) => boolean): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node === 'string') {
      if (isBad(node)) return true;
    } else if (node !== null && typeof node === 'object') {
      for (const inner of Object.values(node)) pending.push(inner);
    }
  }
  return false;
}

const isUnstorable = (text: string) => !isStorableText(text);

/** JSON pointers of every string in `value` that is not storable text (at most MAX_REPORTED). */
export function unstorableTextPaths(value: unknown): string[] {
  return anyText(value, isUnstorable) ? textPaths(value, isUnstorable) : [];
}
