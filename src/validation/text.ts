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

export const UNSTORABLE_TEXT = 'contains a NUL character or a lone surrogate';

/** JSON pointers (RFC 6901) of every string in `value` that is not storable text; walks without recursion. */
export function unstorableTextPaths(value: unknown): string[] {
  const paths: string[] = [];
  const pending: Array<[unknown, string]> = [[value, '']];
  while (pending.length > 0) {
    const [current, path] = pending.pop()!;
    if (typeof current === 'string') {
      if (!isStorableText(current)) paths.push(path || '/');
    } else if (current !== null && typeof current === 'object') {
      for (const [key, inner] of Object.entries(current)) pending.push([inner, `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`]);
    }
  }
  return paths.sort();
}
