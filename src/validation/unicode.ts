/**
 * A lone UTF-16 surrogate: JSON may escape one (`"\ud800"`), but it is not Unicode text, no UTF-8
 * encodes it, and PostgreSQL refuses it in text and jsonb. A request carrying one anywhere (keys
 * included) is refused before any of it is used. (NUL, valid Unicode that PostgreSQL cannot store
 * either, is refused by the schemas where a value is stored.)
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** At most this many places are reported. */
const MAX_REPORTED = 20;

const pointerSegment = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

interface Visit {
  node: unknown;
  parent?: Visit;
  segment?: string;
}

/** A node's JSON pointer, built only for what is reported (building every path of a deep body would be quadratic). */
function pointerOf(visit: Visit, base: string): string {
  const segments: string[] = [];
  for (let at: Visit | undefined = visit; at?.segment !== undefined; at = at.parent) segments.push(at.segment);
  return base + segments.reverse().map((segment) => `/${segment}`).join('') || '/';
}

/**
 * JSON pointers (under `base`) of the strings and member names in `value` that hold a lone
 * surrogate (at most MAX_REPORTED). Iterative: a body may nest deeply.
 */
export function loneSurrogates(value: unknown, base = ''): Array<{ path: string; message: string }> {
  const found: Array<{ path: string; message: string }> = [];
  const pending: Visit[] = [{ node: value }];
  while (pending.length > 0 && found.length < MAX_REPORTED) {
    const visit = pending.pop()!;
    const { node } = visit;
    if (typeof node === 'string') {
      if (LONE_SURROGATE.test(node)) found.push({ path: pointerOf(visit, base), message: 'must not contain a lone UTF-16 surrogate (not Unicode text)' });
    } else if (Array.isArray(node)) {
      for (let index = node.length - 1; index >= 0; index -= 1) pending.push({ node: node[index], parent: visit, segment: String(index) });
    } else if (typeof node === 'object' && node !== null) {
      for (const [key, item] of Object.entries(node).reverse()) {
        const child = { node: item, parent: visit, segment: pointerSegment(key) };
        if (LONE_SURROGATE.test(key)) found.push({ path: pointerOf(child, base), message: 'a member name must not contain a lone UTF-16 surrogate (not Unicode text)' });
        else pending.push(child);
      }
    }
  }
  return found;
}
