import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SUFFIXES: Record<string, string[]> = {
  counter: [''],
  gauge: [''],
  untyped: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
};

function parseValue(text: string, line: string): number {
  // the text format reads values with Go's ParseFloat, which takes NaN in any case: prom-client
  // writes `Nan` (the event-loop lag mean of a scrape with no sample since the last one)
  if (/^nan$/i.test(text)) {
    return NaN;
  }
  if (text === '+Inf') {
    return Infinity;
  }
  if (text === '-Inf') {
    return -Infinity;
  }
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) {
    throw new Error(`bad sample value in: ${line}`);
  }
  return Number(text);
}

/** `name="value",…` with the text format's escapes (\\, \", \n). */
function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    const name = text.slice(i, eq);
    if (eq < 0 || !LABEL_NAME.test(name) || text[eq + 1] !== '"') {
      throw new Error(`bad label at ${i} in: ${line}`);
    }
    let j = eq + 2;
    let value = '';
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\\') {
        const next = text[++j];
        if (next !== '\\' && next !== '"' && next !== 'n') {
          throw new Error(`bad escape in: ${line}`);
        }
        value += next === 'n' ? '\n' : next;
      } else {
        value += text[j];
      }
    }
    if (j >= text.length) {
      throw new Error(`unterminated label value in: ${line}`);
    }
    if (name in labels) {
      throw new Error(`label ${name} twice in: ${line}`);
    }
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') {
      i += 1;
    } else if (i < text.length) {
      throw new Error(`expected , after label ${name} in: ${line}`);
    }
  }
  return labels;
}

/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4): every sample belongs to
 * a family declared by `# TYPE` before it, HELP and TYPE at most once per family, names and labels
 * well-formed, no series twice, histogram buckets cumulative with `+Inf` equal to `_count`.
 * Throws on the first violation.
 */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const helps = new Set<string>();
  const seen = new Set<string>();
  const lines = text.split('\n');
  if (lines.at(-1) !== '') {
    throw new Error('exposition does not end with a newline');
  }
  for (const line of lines.slice(0, -1)) {
    if (line === '') {
      continue; // empty lines are ignored
    }
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
      if (!m) {
        continue; // a plain comment
      }
      const [, kind, name, rest] = m as unknown as [string, string, string, string];
      if (!NAME.test(name)) {
        throw new Error(`bad metric name: ${line}`);
      }
      if (kind === 'HELP') {
        if (helps.has(name)) {
          throw new Error(`HELP twice for ${name}`);
        }
        helps.add(name);
        const family = families.get(name);
        if (family) {
          family.help = rest;
        } else {
          families.set(name, { type: '', help: rest, samples: [] });
        }
        continue;
      }
      if (!TYPES.has(rest)) {
        throw new Error(`bad type: ${line}`);
      }
      const family = families.get(name) ?? { type: '', help: '', samples: [] };
      if (family.type) {
        throw new Error(`TYPE twice for ${name}`);
      }
      if (family.samples.length > 0) {
        throw new Error(`TYPE after samples for ${name}`);
      }
      family.type = rest;
      families.set(name, family);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line);
    if (!m) {
      throw new Error(`bad sample line: ${line}`);
    }
    const [, name, labelText, valueText] = m as unknown as [string, string, string, string];
    const labels = parseLabels(labelText ?? '', line);
    const value = parseValue(valueText, line);
    const family = [...families.entries()].find(
      ([f, fam]) => fam.type && SUFFIXES[fam.type].some((s) => `${f}${s}` === name),
    );
    if (!family) {
      throw new Error(`sample without a TYPE-declared family: ${line}`);
    }
    const key = `${name}{${Object.entries(labels)
      .sort()
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(',')}}`;
    if (seen.has(key)) {
      throw new Error(`series twice: ${key}`);
    }
    seen.add(key);
    family[1].samples.push({ name, labels, value });
  }
  for (const [name, family] of families) {
    if (!family.type) {
      throw new Error(`HELP without TYPE: ${name}`);
    }
    if (family.type === 'histogram') {
      checkHistogram(name, family);
    }
  }
  return families;
}

function checkHistogram(name: string, family: Family): void {
  const series = new Map<string, { buckets: [number, number][]; count?: number }>();
  for (const s of family.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (s.name === `${name}_bucket`) {
      if (le === undefined) {
        throw new Error(`${name}_bucket without le`);
      }
      entry.buckets.push([parseValue(le, le), s.value]);
    } else if (s.name === `${name}_count`) {
      entry.count = s.value;
    }
  }
  for (const [key, { buckets, count }] of series) {
    const sorted = [...buckets].sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < sorted.length; i++) {
      if (sorted[i][1] < sorted[i - 1][1]) {
        throw new Error(`${name}${key}: buckets not cumulative`);
      }
    }
    const inf = sorted.at(-1);
    if (!inf || inf[0] !== Infinity || inf[1] !== count) {
      throw new Error(`${name}${key}: +Inf bucket missing or not equal to _count`);
    }
  }
}

/** Sum of the samples named `sample` whose labels include `labels`. */
export function total(
  families: Map<string, Family>,
  sample: string,
  labels: Record<string, string> = {},
): number {
  let sum = 0;
  for (const family of families.values()) {
    for (const s of family.samples) {
      if (s.name === sample && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) {
        sum += s.value;
      }
    }
  }
  return sum;
}

/** `promtool` from PROMTOOL or PATH, if installed (Debian: package `prometheus`). */
export function findPromtool(env: NodeJS.ProcessEnv): string | undefined {
  const candidates = [
    env.PROMTOOL,
    ...(env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'promtool')),
  ];
  for (const candidate of candidates) {
    if (!candidate) {
      continue;
    }
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not there
    }
  }
  return undefined;
}

/**
 * `promtool check metrics` on an exposition: its exit status and what it printed (parse errors,
 * lint problems, one per line).
 */
export function promtoolCheck(
  promtool: string,
  exposition: string,
): { status: number | null; problems: string[] } {
  const run = spawnSync(promtool, ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  const problems = `${run.stdout}${run.stderr}`.split('\n').filter((line) => line.trim() !== '');
  return { status: run.status, problems };
}
