import { Readable } from 'node:stream';
import Negotiator from 'negotiator';
import type { FastifyReply } from 'fastify';
import { DomainError } from './errors.js';

const EXPORT_TYPES = ['application/x-ndjson', 'text/csv'] as const;
export type ExportType = (typeof EXPORT_TYPES)[number];

/** The export's media type from `Accept` (NDJSON when absent or `*\/*`); neither -> 406. */
export function exportType(accept: string | undefined): ExportType {
  if (!accept || accept.trim() === '') {
    return 'application/x-ndjson';
  }
  const chosen = new Negotiator({ headers: { accept } }).mediaType([...EXPORT_TYPES]);
  if (chosen === undefined) {
    throw new DomainError(
      'not_acceptable',
      'This endpoint produces application/x-ndjson or text/csv',
    );
  }
  return chosen as ExportType;
}

/**
 * The first characters a spreadsheet may run as a formula (OWASP "CSV Injection"): `=`, `+`, `-`,
 * `@`, tab and carriage return.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, quote or line break; objects as JSON.
 * A text value starting like a formula gets a leading `'` (a name `=HYPERLINK(…)` or `-5` is text,
 * shown as such); numbers, booleans and JSON members (`[`, `{`) are written as they are, so a
 * negative number stays a number (docs/admin.md "Exports").
 */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) {
    return '';
  }
  let text: string;
  if (typeof value === 'string') {
    text = FORMULA_START.test(value) ? `'${value}` : value;
  } else {
    text = JSON.stringify(value); // numbers, booleans, objects as JSON
  }
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * Sends `batches` of database rows as one line per row in their REST representation (`toRest`):
 * NDJSON, or CSV with a header line of `columns` (nested members as JSON text). Pulled from the
 * generator as the socket drains (Readable.from honours backpressure), so memory stays at one
 * database batch (which its scan empties once it is written: releaseBatch in
 * src/database/paging.ts); the lines go out in chunks of 16 KB or more, each row mapped to its REST
 * representation only while its line is made. A failure after the first byte can only end the
 * response early: the stream is destroyed and the client sees a truncated body (no final line
 * break).
 */
export function sendExport<R, T extends object>(
  reply: FastifyReply,
  type: ExportType,
  filename: string,
  columns: readonly (keyof T & string)[],
  batches: AsyncIterable<readonly R[]> | Iterable<readonly R[]>,
  toRest: (row: R) => T,
): FastifyReply {
  const line =
    type === 'text/csv'
      ? (row: R) => {
          const rest = toRest(row);
          return `${columns.map((c) => csvField(rest[c])).join(',')}\r\n`;
        }
      : (row: R) => `${JSON.stringify(toRest(row))}\n`;
  async function* lines(): AsyncGenerator<string> {
    if (type === 'text/csv') {
      yield `${columns.join(',')}\r\n`;
    }
    let chunk = '';
    for await (const batch of batches) {
      for (const row of batch) {
        chunk += line(row);
        if (chunk.length >= 16_384) {
          yield chunk;
          chunk = '';
        }
      }
    }
    if (chunk !== '') {
      yield chunk;
    }
  }
  const ext = type === 'text/csv' ? 'csv' : 'ndjson';
  return reply
    .code(200)
    .header(
      'Content-Type',
      type === 'text/csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson',
    )
    .header('Content-Disposition', `attachment; filename="${filename}.${ext}"`)
    .header('Cache-Control', 'no-store')
    .send(Readable.from(lines(), { objectMode: false, highWaterMark: 1 }));
}
