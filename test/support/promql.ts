/** PromQL's aggregation operators and keywords: names that are never series, whether or not a parenthesis follows. */
const NOT_SERIES = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'offset',
  'bool',
  'atan2',
  'inf',
  'nan',
]);

/**
 * The series names a PromQL expression reads: every identifier that is not a function call, an
 * aggregation, a keyword, a label (inside `{…}` or the label lists of by/without/on/ignoring) or a
 * string. Enough for the expressions of deploy/ (no `{__name__=…}` selectors).
 */
export function seriesNames(expression: string): string[] {
  const stripped = expression
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const match of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const name = match[0];
    const rest = stripped.slice(match.index + name.length);
    const before = stripped[match.index - 1];
    if (before !== undefined && /[0-9.]/.test(before)) continue; // a unit or exponent of a number: 5m, 1e3
    if (NOT_SERIES.has(name) || /^\s*\(/.test(rest)) continue;
    names.add(name);
  }
  return [...names].sort();
}

/** The series names a Prometheus text exposition declares (its # TYPE lines), with each histogram's and summary's own series. */
export function exposedSeriesNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const match of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = match as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(name + suffix);
  }
  return names;
}
