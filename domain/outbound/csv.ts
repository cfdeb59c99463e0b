/**
 * Contact CSV reading (docs/voice.md "Outbound voice campaigns"): a streaming parse with csv-parse, header → field
 * mapping (phone, first/last name, time zone; every other column becomes a free variable), and malformed
 * files reported with the row, line and column at fault.
 */
import { Readable } from 'node:stream';
import { parse, CsvError } from 'csv-parse';
import { parse as parseSync } from 'csv-parse/sync';
import type { ContactColumnMapping } from '../../schemas/types/outbound';

/** Recognised headers per field, compared after lower-casing and dropping everything but letters and digits. */
const KNOWN_HEADERS: Record<keyof ContactColumnMapping, string[]> = {
  phone: ['phone', 'phonenumber', 'number', 'mobile', 'mobilephone', 'cell', 'e164', 'telephone', 'tel'],
  firstName: ['firstname', 'first', 'givenname'],
  lastName: ['lastname', 'last', 'surname', 'familyname'],
  timeZone: ['timezone', 'tz', 'zone'],
};

const norm = (h: string) => h.toLowerCase().replace(/[^a-z0-9]/g, '');

/** Column indexes of the fields, and the free variables' names by column. */
export interface ResolvedColumns {
  phone: number;
  firstName: number | null;
  lastName: number | null;
  timeZone: number | null;
  /** column index → variable name (the header as written). */
  variables: [number, string][];
}

/** A problem with the file as a whole or one place in it. */
export class CsvFormatError extends Error {
  constructor(
    message: string,
    /** Data row (1 = first row after the header; 0 = the header). */
    readonly row: number | null,
    /** 1-based column. */
    readonly column: number | null,
    /** 1-based line of the file. */
    readonly line: number | null,
  ) {
    super(message);
    this.name = 'CsvFormatError';
  }
}

/**
 * Maps a header row to fields: explicit `mapping` first (a header named there must exist), else the
 * recognised names.
 * @throws CsvFormatError when there is no phone column, a mapped header is missing, or a header repeats
 */
export function resolveColumns(header: string[], mapping: ContactColumnMapping = {}): ResolvedColumns {
  const seen = new Map<string, number>();
  header.forEach((h, i) => {
    if (seen.has(h)) throw new CsvFormatError(`header "${h}" appears twice (columns ${seen.get(h)! + 1} and ${i + 1})`, 0, i + 1, 1);
    seen.set(h, i);
  });
  const pick = (field: keyof ContactColumnMapping): number | null => {
    const explicit = mapping[field];
    if (explicit !== undefined) {
      const i = header.indexOf(explicit);
      if (i < 0) throw new CsvFormatError(`columnMapping.${field} names header "${explicit}", which the file does not have`, 0, null, 1);
      return i;
    }
    const i = header.findIndex((h) => KNOWN_HEADERS[field].includes(norm(h)));
    return i < 0 ? null : i;
  };
  const phone = pick('phone');
  if (phone === null) throw new CsvFormatError(`no phone column: name one of ${KNOWN_HEADERS.phone.join(', ')} or set columnMapping.phone`, 0, null, 1);
  const cols = { phone, firstName: pick('firstName'), lastName: pick('lastName'), timeZone: pick('timeZone') };
  const used = new Set(Object.values(cols).filter((v): v is number => v !== null));
  const variables: [number, string][] = header.map((h, i) => [i, h] as [number, string]).filter(([i]) => !used.has(i));
  return { ...cols, variables };
}

/** One data row read from the file. */
export interface CsvContactRow {
  /** 1-based data row. */
  row: number;
  phone: string;
  firstName: string | null;
  lastName: string | null;
  timeZone: string | null;
  variables: Record<string, string>;
}

function toCsvError(err: unknown, header: string[] | null): CsvFormatError {
  if (err instanceof CsvFormatError) return err;
  if (err instanceof CsvError) {
    const e = err as CsvError & { lines?: number; records?: number; index?: number };
    const row = typeof e.records === 'number' ? e.records : null; // records parsed before the bad one, header included
    let column: number | null = null;
    let what = e.message.replace(/ on line \d+$/, '');
    if (e.code === 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH') {
      // The parser may fail before the header record is handed out, so the expected width comes from the error.
      const got = (e as unknown as { record?: unknown[] }).record?.length ?? 0;
      const expected = Number(/expect (\d+)/.exec(e.message)?.[1]) || header?.length || 0;
      column = got > expected ? expected + 1 : got;
      what = `expected ${expected} columns, got ${got}`;
    } else if (typeof e.index === 'number') {
      column = e.index + 1;
    }
    const where = [row !== null ? `row ${row}` : null, column !== null ? `column ${column}${header && header[column - 1] ? ` (${header[column - 1]})` : ''}` : null, e.lines ? `line ${e.lines}` : null]
      .filter(Boolean)
      .join(', ');
    return new CsvFormatError(`${where}: ${what}`, row, column, e.lines ?? null);
  }
  throw err;
}

/**
 * Streams the contact rows of a CSV.
 * @param data the file bytes (UTF-8, optional BOM, comma-separated, header row first)
 * @throws CsvFormatError naming row, column and line of a malformed record, or a header problem
 */
export async function* readContactRows(data: Buffer | Readable, mapping?: ContactColumnMapping): AsyncGenerator<CsvContactRow> {
  const parser = parse({ bom: true, trim: true, skip_empty_lines: true, relax_column_count: false, max_record_size: 64 * 1024 });
  const source = Buffer.isBuffer(data) ? Readable.from([data]) : data;
  source.pipe(parser);
  let header: string[] | null = null;
  let cols: ResolvedColumns | null = null;
  let row = 0;
  try {
    for await (const rec of parser as AsyncIterable<string[]>) {
      if (!header) {
        const bad = rec.findIndex((cell) => cell.includes('\u0000'));
        if (bad >= 0) throw new CsvFormatError(`header, column ${bad + 1}: contains a NUL character (U+0000)`, 0, bad + 1, 1);
        header = rec;
        cols = resolveColumns(header, mapping);
        continue;
      }
      row++;
      // Postgres cannot store U+0000: refuse the file up front, naming the cell, rather than fail the import.
      const nul = rec.findIndex((cell) => cell.includes('\u0000'));
      if (nul >= 0) {
        const name = header[nul] ? ` (${header[nul]})` : '';
        throw new CsvFormatError(`row ${row}, column ${nul + 1}${name}: contains a NUL character (U+0000)`, row, nul + 1, null);
      }
      const c = cols!;
      const variables: Record<string, string> = {};
      for (const [i, name] of c.variables) if (rec[i] !== '') variables[name] = rec[i];
      const opt = (i: number | null) => (i === null || rec[i] === '' ? null : rec[i]);
      yield { row, phone: rec[c.phone], firstName: opt(c.firstName), lastName: opt(c.lastName), timeZone: opt(c.timeZone), variables };
    }
  } catch (err) {
    // The parser may fail before it hands out the header record: read the header alone to name columns.
    if (!header && Buffer.isBuffer(data)) {
      try {
        header = (parseSync(data.subarray(0, 64 * 1024), { bom: true, trim: true, to_line: 1 }) as string[][])[0] ?? null;
      } catch {
        header = null;
      }
    }
    throw toCsvError(err, header);
  }
  if (!header) throw new CsvFormatError('the file is empty: a header row is expected', 0, null, 1);
}

/**
 * Reads the whole file once without keeping rows, to refuse a malformed file up front (the API answers
 * 400 before starting the asynchronous import).
 * @returns the number of data rows
 * @throws CsvFormatError
 */
export async function checkContactCsv(data: Buffer, mapping?: ContactColumnMapping): Promise<number> {
  let n = 0;
  for await (const _ of readContactRows(data, mapping)) n++;
  return n;
}
