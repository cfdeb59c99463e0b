/**
 * The plain create/list/get/update/delete of an organization's rows in one table with an `id`, `org_id`,
 * a `seq` bigserial and `updated_at` (organization variables, escalation destinations, dashboards). Every
 * function takes the organization id first; another organization's row is invisible (undefined / false),
 * exactly like a missing one.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';

/** Thrown by insert/update when a unique constraint of the table (e.g. the name) is violated. */
export class DuplicateRowError extends Error {
  constructor(readonly constraint: string | undefined) {
    super(`duplicate row (${constraint ?? 'unique'})`);
    this.name = 'DuplicateRowError';
  }
}

type Conn = Db | Knex.Transaction;

async function uniqueGuard<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    const e = err as { code?: string; constraint?: string };
    if (e?.code === '23505') throw new DuplicateRowError(e.constraint);
    throw err;
  }
}

/** The table's functions, each row through `view`. */
export interface OrgTable<V> {
  /** Inserts a row (a new `<prefix>_…` id). @throws DuplicateRowError */
  insert(db: Conn, orgId: string, columns: Record<string, unknown>): Promise<V>;
  /** One page, oldest first. @throws InvalidCursorError */
  list(db: Conn, orgId: string, page: { limit: number; cursor?: string }): Promise<Page<V>>;
  /** One row, or undefined. */
  get(db: Conn, orgId: string, id: string): Promise<V | undefined>;
  /** Every row of the organization (small tables only), oldest first. */
  all(db: Conn, orgId: string): Promise<V[]>;
  /** Sets columns (and `updated_at`); undefined when not found. @throws DuplicateRowError */
  update(db: Conn, orgId: string, id: string, columns: Record<string, unknown>): Promise<V | undefined>;
  /** Deletes; false when not found. */
  remove(db: Conn, orgId: string, id: string): Promise<boolean>;
}

/**
 * The functions of `table`.
 * @param prefix id prefix without the underscore, e.g. `var`
 * @param view row → API shape
 */
export function orgTable<V>(table: string, prefix: string, view: (row: Record<string, any>) => V): OrgTable<V> {
  return {
    insert: (db, orgId, columns) =>
      uniqueGuard(async () => view((await db(table).insert({ id: newId(prefix), org_id: orgId, ...columns }).returning('*'))[0])),
    list: (db, orgId, page) => keysetPage(db(table).where({ org_id: orgId }).select('*'), { ...page, column: 'seq', direction: 'asc', map: view }),
    get: async (db, orgId, id) => {
      const row = await db(table).where({ org_id: orgId, id }).first();
      return row ? view(row) : undefined;
    },
    all: async (db, orgId) => (await db(table).where({ org_id: orgId }).orderBy('seq')).map(view),
    update: (db, orgId, id, columns) =>
      uniqueGuard(async () => {
        const [row] = await db(table).where({ org_id: orgId, id }).update({ ...columns, updated_at: db.fn.now() }).returning('*');
        return row ? view(row) : undefined;
      }),
    remove: async (db, orgId, id) => (await db(table).where({ org_id: orgId, id }).delete()) > 0,
  };
}
