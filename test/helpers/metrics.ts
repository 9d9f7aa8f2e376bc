// Reading GET /metrics in tests: scrape with a token, parse the Prometheus text format with
// parse-prometheus-text-format, and find one series' value by its labels.
// That parser (1.1.1) folds every labelled histogram of a family into one unlabelled set of buckets
// and drops its _sum and _count. So the text is parsed twice: as it is, for the families and their
// types; and with histograms declared untyped, which keeps each _bucket, _sum and _count sample with
// its labels, as PromQL sees them.
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

export type Families = ReturnType<typeof parsePrometheusTextFormat>;
type Sample = Families[number]['metrics'][number];

export interface Scrape {
  /** The metric families with their types. */
  families: Families;
  /** Every sample by the name PromQL knows it by (`x_bucket`, `x_sum`, `x_count` for a histogram). */
  samples: Map<string, Sample[]>;
}

export function parseScrape(text: string): Scrape {
  const families = parsePrometheusTextFormat(text);
  const samples = new Map<string, Sample[]>();
  const untyped = text.replace(/^(# TYPE \S+) histogram$/gm, '$1 untyped');
  for (const family of parsePrometheusTextFormat(untyped)) {
    samples.set(family.name, [...(samples.get(family.name) ?? []), ...family.metrics]);
  }
  return { families, samples };
}

export async function scrape(url: string, token: string): Promise<Scrape> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${await res.text()}`);
  return parseScrape(await res.text());
}

const matches = (labels: Record<string, string> | undefined, want: Record<string, string>) =>
  Object.entries(want).every(([k, v]) => labels?.[k] === v);

/** The samples named `name` whose labels include `labels`. */
export function series(scraped: Scrape, name: string, labels: Record<string, string> = {}): Sample[] {
  const found = scraped.samples.get(name);
  if (!found) throw new Error(`No metric ${name} in the scrape`);
  return found.filter((m) => matches(m.labels, labels));
}

/** The value of the one sample with these labels (0 when there is none: a counter not yet counted). */
export function value(scraped: Scrape, name: string, labels: Record<string, string> = {}): number {
  const found = series(scraped, name, labels);
  if (found.length > 1) throw new Error(`${found.length} series of ${name} match ${JSON.stringify(labels)}`);
  return found.length === 0 ? 0 : Number(found[0]!.value);
}
