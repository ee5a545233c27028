/**
 * The languages of the service's web pages (/docs, /console): Russian, the partners' own, and
 * English. The wire stays English (error messages are for logs); the pages speak the reader's.
 */
export const LANGUAGES = ['en', 'ru'] as const;
export type Language = (typeof LANGUAGES)[number];

const isLanguage = (value: unknown): value is Language => typeof value === 'string' && (LANGUAGES as readonly string[]).includes(value);

/**
 * The page's language: `?lang=ru|en` when the reader chose one (the pages' language switch), else
 * the one of ours the browser's Accept-Language (RFC 9110, q-values) prefers, else English.
 */
export function pageLanguage(chosen: unknown, acceptLanguage: string | undefined): Language {
  if (isLanguage(chosen)) return chosen;
  let best: { language: Language; weight: number } | undefined;
  for (const entry of (acceptLanguage ?? '').split(',')) {
    const [range, ...parameters] = entry.trim().split(';');
    const language = range!.trim().toLowerCase().split('-')[0];
    const q = parameters.map((parameter) => /^\s*q\s*=\s*([01](?:\.\d{0,3})?)\s*$/i.exec(parameter)).find(Boolean);
    const weight = q ? Number(q[1]) : 1;
    if (isLanguage(language) && weight > 0 && (!best || weight > best.weight)) best = { language, weight };
  }
  return best?.language ?? 'en';
}

/** `path` in `language`: the pages' own links keep the reader's choice. */
export function inLanguage(path: string, language: Language): string {
  const [base, hash] = path.split('#');
  return `${base}${base!.includes('?') ? '&' : '?'}lang=${language}${hash === undefined ? '' : `#${hash}`}`;
}
