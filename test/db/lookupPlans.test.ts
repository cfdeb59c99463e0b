/**
 * The hot statements' plans on a new database (db/groupCommit.ts `inOrganization`): the pool's sessions keep one
 * generic plan per prepared statement (db/index.ts `planCacheMode`), made when a connection opens, before any table
 * has been analyzed. A row a statement looks up by id must then be found by its primary key, never by scanning its
 * organization's rows through another index and filtering them by id (which costs all the organization's rows per
 * lookup until an ANALYZE re-plans it).
 */
import { expect } from 'chai';
import { createDb, openPoolMinimum, type Db } from '../../db/index';
import { getConversationWithHistory } from '../../db/repositories/conversations';
import { advanceMessage } from '../../db/repositories/smsMessages';
import '../../db/repositories/smsReplies';
import '../../db/repositories/smsConversations';
import '../../db/repositories/conversationStarts';
import { createMigratedTestDatabase } from '../helpers/postgres';

/** A plan node of `EXPLAIN (FORMAT JSON)` (PostgreSQL docs "EXPLAIN"). */
interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Filter?: string;
  Plans?: PlanNode[];
}

/** Every node of `node`'s tree. */
function nodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodes)];
}

/** True when `filter` compares the row's own `id` column (bare or `alias.id`) for equality. */
const filtersById = (filter: string | undefined): boolean => !!filter && /(^|[(\s])(\w+\.)?id = |= (\w+\.)?id\)/.test(filter);

describe('hot statements on a database never analyzed', () => {
  let db: Db | undefined;
  before(async () => {
    const url = await createMigratedTestDatabase('lookupplans');
    const migrator = createDb(url);
    await migrator.destroy();
    // One connection, opened as an API process opens its pool (db/index.ts openPoolMinimum): every hot statement
    // prepared and planned on it.
    db = createDb(url, { poolMax: 1, poolMin: 1 });
  });
  after(async () => db?.destroy());

  it('find each row they look up by id by its primary key', async () => {
    expect(await openPoolMinimum(db!)).to.equal(1);
    // A turn's read is prepared on connect too; a text's move (a delivery receipt) on first use.
    expect(await getConversationWithHistory(db!, 'org_none', 'conv_none', 10)).to.equal(undefined);
    await advanceMessage(db!, 'org_none', 'msg_none', { status: 'delivered' }, async () => undefined);
    const prepared = (await db!.raw(`SELECT name, statement, cardinality(parameter_types) AS params FROM pg_prepared_statements`)).rows as { name: string; statement: string; params: number }[];
    const checked: string[] = [];
    const wrong: string[] = [];
    for (const p of prepared) {
      const args = Array.from({ length: p.params }, () => 'NULL').join(', ');
      const plan = (await db!.raw(`EXPLAIN (FORMAT JSON) EXECUTE ${p.name}${p.params ? `(${args})` : ''}`)).rows[0]['QUERY PLAN'][0].Plan as PlanNode;
      checked.push(p.statement.slice(0, 40));
      for (const n of nodes(plan)) {
        if (/Index/.test(n['Node Type']) && n['Index Name'] && !/_pkey$/.test(n['Index Name']) && filtersById(n.Filter)) {
          wrong.push(`${p.statement.replace(/\s+/g, ' ').slice(0, 60)}: ${n['Index Name']} (${n['Index Cond']}) filtered by ${n.Filter}`);
        }
      }
    }
    for (const start of ['/* sms reply sent */', '/* sms reply queue */', 'UPDATE sms_messages m SET', '/* turn read */', 'WITH x AS (']) {
      expect(checked.some((s) => s.startsWith(start))).to.equal(true, `${start} not prepared; prepared:\n${checked.join('\n')}`);
    }
    expect(wrong).to.deep.equal([]);
  });
});
