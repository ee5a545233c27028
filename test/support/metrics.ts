/**
 * Values of a process's /metrics (Prometheus text) on its internal listener: each series given as
 * written there, e.g. `ehr_gateway_intake_requests{state="reading"}`; NaN for a series it lacks.
 */
export async function scrapeSeries<K extends string>(internalUrl: string, series: readonly K[]): Promise<Record<K, number>> {
  const text = await (await fetch(`${internalUrl}/metrics`)).text();
  const values = {} as Record<K, number>;
  for (const name of series) {
    const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    values[name] = Number(new RegExp(`^${escaped} (\\d+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  }
  return values;
}

/** One series of a process's /metrics (see scrapeSeries). */
export async function scrapeOne(internalUrl: string, series: string): Promise<number> {
  return (await scrapeSeries(internalUrl, [series]))[series] as number;
}
