/**
 * What the named parts of an agent's draft — skills and playbooks (spec Skills and Playbooks rows) — read
 * and write the same way: pages in creation order (`seq`), one part by id, and inserts whose name is unique
 * per agent. Every query is scoped by organization and agent.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { keysetPage, type Page } from '../pagination';
import { newId } from '../ids';
import { DuplicateNameError, isUniqueViolation, type Conn } from './agents';

/** A table of named draft parts. */
export type DraftPartTable = 'agent_skills' | 'agent_playbooks';

/** The reads and the insert of one kind of draft part, each mapping stored rows to `T`; `F` is what an insert is given. */
export interface DraftPartRepository<T, F extends { name: string }> {
  /** The parts of an agent in creation order. @throws InvalidCursorError */
  list(db: Db, orgId: string, agentId: string, page: { limit: number; cursor?: string }): Promise<Page<T>>;
  /** One part of an agent, or undefined when it does not exist there. */
  get(conn: Conn, orgId: string, agentId: string, id: string): Promise<T | undefined>;
  /** Inserts a part with a new id (inside an `editDraft` transaction). @throws DuplicateNameError when the agent has a part of that name */
  insert(trx: Knex.Transaction, orgId: string, agentId: string, fields: F): Promise<T>;
}

/**
 * The repository of the parts stored in `table`.
 * @param entity what a DuplicateNameError names, e.g. `skill`
 * @param idPrefix prefix of new ids (db/ids.ts), e.g. `skl`
 * @param map stored row → API shape
 * @param columns insert fields → the part's own columns (`name` among them; ids and scope are added)
 */
export function draftPartRepository<T, F extends { name: string }>(
  table: DraftPartTable,
  entity: string,
  idPrefix: string,
  map: (row: any) => T,
  columns: (fields: F) => Record<string, unknown>,
): DraftPartRepository<T, F> {
  return {
    list: (db, orgId, agentId, page) => keysetPage(db(table).where({ org_id: orgId, agent_id: agentId }), { ...page, column: 'seq', map }),
    get: async (conn, orgId, agentId, id) => {
      const r = await conn(table).where({ org_id: orgId, agent_id: agentId, id }).first();
      return r ? map(r) : undefined;
    },
    insert: async (trx, orgId, agentId, fields) => {
      try {
        const [stored] = await trx(table)
          .insert({ id: newId(idPrefix), org_id: orgId, agent_id: agentId, ...columns(fields) })
          .returning('*');
        return map(stored);
      } catch (err) {
        if (isUniqueViolation(err)) throw new DuplicateNameError(entity, fields.name);
        throw err;
      }
    },
  };
}
