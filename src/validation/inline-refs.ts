/**
 * A copy of `value` with every local `$ref` (`#/…`) replaced by a copy of its target; OpenAPI 3.1
 * siblings of a `$ref` (a `description`, `examples`) are kept over the target's. Every object of
 * the result is its own: nothing is shared between two places. Recursive schemas are not supported.
 */
export function inlineLocalRefs(document: unknown, value: unknown = document, depth = 0): unknown {
  if (depth > 100) throw new Error('$ref nesting deeper than 100 levels: recursive schemas are not supported');
  if (Array.isArray(value)) return value.map((item) => inlineLocalRefs(document, item, depth + 1));
  if (!value || typeof value !== 'object') return value;
  const { $ref, ...siblings } = value as { $ref?: unknown };
  if (typeof $ref === 'string') {
    if (!$ref.startsWith('#/')) throw new Error(`only local references are supported, not ${$ref}`);
    const target = $ref
      .slice(2)
      .split('/')
      .reduce<unknown>((node, segment) => (node as Record<string, unknown> | undefined)?.[segment.replaceAll('~1', '/').replaceAll('~0', '~')], document);
    if (target === undefined) throw new Error(`unresolved reference ${$ref}`);
    return inlineLocalRefs(document, { ...(target as object), ...siblings }, depth + 1);
  }
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, inlineLocalRefs(document, inner, depth + 1)]));
}
