/**
 * The in-process full-text index (services/knowledge/lexicalIndex.ts; docs/knowledge.md "Retrieval") gives exactly
 * Postgres's lists, scores and hits over the labelled set (English and Spanish) and over random word mixes, declines
 * what it cannot rank the same way, and sees a change of the knowledge through the change feed (migration
 * 20261129001500). Real Postgres; the feed is a real LISTEN connection.
 */
import { expect } from 'chai';
import { createDb, type Db } from '../../../db';
import { ChangeFeed } from '../../../db/changeFeed';
import { createOrganization } from '../../../db/repositories/organizations';
import { createSource, indexChunks, markProcessing, rankChunkLists, MAX_QUERY_TERMS } from '../../../db/repositories/knowledge';
import { retrieveKnowledge } from '../../../services/knowledge/retrieval';
import { KnowledgeIndexes } from '../../../services/knowledge/lexicalIndex';
import type { EmbeddingsProvider } from '../../../providers/embeddings';
import { loadRetrievalSet, seedRetrievalSet, type SeededKnowledgeBase } from '../../helpers/retrievalEval';
import { seededRandom } from '../../helpers/random';
import { createMigratedTestDatabase } from '../../helpers/postgres';

/** No vectors: the lexical path. */
const LEXICAL: EmbeddingsProvider = { name: 'lexical', model: null, embed: async () => [] };

describe('in-process knowledge index', function () {
  this.timeout(120_000);
  let db: Db;
  let url: string;
  let feed: ChangeFeed;
  let indexes: KnowledgeIndexes;
  let orgId: string;
  let seeded: SeededKnowledgeBase[];
  const sourcesOf = new Map<string, string[]>();

  /** Resolves at the next notification of `table` for the organization. */
  const nextChange = (table: string) => new Promise<void>((resolve) => feed.on(table, (key) => key === orgId && resolve()));

  before(async () => {
    url = await createMigratedTestDatabase('lexical_index');
    db = createDb(url);
    feed = new ChangeFeed();
    await feed.start(url);
    indexes = new KnowledgeIndexes(feed, 30);
    orgId = (await createOrganization(db, 'Lexical index')).id;
    seeded = await seedRetrievalSet(db, orgId, loadRetrievalSet());
    // The clinic's agent also gets a Spanish source: two configurations searched for one agent.
    const clinic = seeded.find((s) => s.kb.id === 'clinic-en')!;
    const es = await createSource(db, orgId, { agentId: clinic.agentId, kind: 'text', name: 'Guía', text: 'guía' }, async () => undefined);
    await markProcessing(db, orgId, es.id);
    const telecom = loadRetrievalSet().find((kb) => kb.language === 'spanish')!;
    await indexChunks(db, orgId, es.id, Object.values(telecom.chunks).map((content, ordinal) => ({ ordinal, content })), undefined, { textSearchConfig: 'spanish' });
    for (const s of seeded) sourcesOf.set(s.agentId, await db('knowledge_sources').where({ org_id: orgId, agent_id: s.agentId }).orderBy('seq').pluck('id'));
  });
  after(async () => {
    await feed?.close();
    await db?.destroy();
  });

  /** Postgres's lists and the index's for the same turns. */
  async function bothRankings(s: SeededKnowledgeBase, turns: string[]) {
    const sourceIds = sourcesOf.get(s.agentId)!;
    const corpus = (await indexes.corpus(db, orgId, sourceIds))!;
    expect(corpus, 'the index is built while the feed is live').to.not.equal(null);
    const fromIndex = corpus.rank(s.agentId, await indexes.lexemesOf(db, corpus.configsOf(s.agentId), turns), 50);
    const fromPostgres = await rankChunkLists(db, orgId, s.agentId, turns, 50, sourceIds);
    return { fromIndex, fromPostgres };
  }

  it('ranks every question of the labelled set, alone and with its earlier turns, exactly as Postgres does (ids, order and scores)', async () => {
    let lists = 0;
    let declined = 0;
    for (const s of seeded) {
      for (const q of s.kb.questions) {
        for (const turns of [[q.q], [q.q, ...(q.earlier ?? []).slice(-2).reverse()]]) {
          const { fromIndex, fromPostgres } = await bothRankings(s, turns);
          if (fromIndex === null) {
            declined++; // a hyphenated word ("x-rays"): Postgres ranks that turn
            continue;
          }
          expect(fromIndex, `${s.kb.id}: ${turns.join(' / ')}`).to.deep.equal(fromPostgres);
          lists += fromPostgres.length;
        }
      }
    }
    expect(lists).to.be.greaterThan(120);
    expect(declined).to.be.lessThan(lists / 10);
  });

  it('ranks 300 random mixes of the corpus words (repeats, ties, both languages) exactly as Postgres does', async () => {
    const random = seededRandom(50);
    let nonEmpty = 0;
    for (let i = 0; i < 300; i++) {
      const s = seeded[i % seeded.length];
      const words = Object.values(s.kb.chunks).join(' ').split(/\s+/);
      const turn = () => Array.from({ length: 1 + Math.floor(random() * 8) }, () => words[Math.floor(random() * words.length)]).join(' ');
      const { fromIndex, fromPostgres } = await bothRankings(s, [turn(), turn()]);
      if (fromIndex === null) continue; // declined (a lexeme the index does not rank): Postgres ranks it
      expect(fromIndex, `query ${i}`).to.deep.equal(fromPostgres);
      if (fromPostgres[0].length) nonEmpty++;
    }
    expect(nonEmpty).to.be.greaterThan(200);
  });

  it('declines a query it could rank differently (a hyphenated lexeme, more than MAX_QUERY_TERMS words), and retrieval then still answers as Postgres does', async () => {
    const s = seeded.find((x) => x.kb.id === 'clinic-en')!;
    const sourceIds = sourcesOf.get(s.agentId)!;
    const corpus = (await indexes.corpus(db, orgId, sourceIds))!;
    const long = Array.from({ length: MAX_QUERY_TERMS + 5 }, (_, i) => `word${i}`).join(' ');
    for (const text of ['same-day emergency visit', long]) {
      expect(corpus.rank(s.agentId, await indexes.lexemesOf(db, corpus.configsOf(s.agentId), [text]), 50), text).to.equal(null);
      const withIndex = await retrieveKnowledge({ db, embeddings: LEXICAL, indexes }, orgId, s.agentId, { text }, 5, sourceIds);
      const without = await retrieveKnowledge({ db, embeddings: LEXICAL }, orgId, s.agentId, { text }, 5, sourceIds);
      expect(withIndex).to.deep.equal(without);
    }
  });

  it('answers a turn with the same hits as Postgres, single and fused, text and sources included', async () => {
    for (const s of seeded) {
      const sourceIds = sourcesOf.get(s.agentId)!;
      for (const q of s.kb.questions.slice(0, 8)) {
        const query = { text: q.q, earlierUserTurns: q.earlier ?? [] };
        const withIndex = await retrieveKnowledge({ db, embeddings: LEXICAL, indexes }, orgId, s.agentId, query, 5, sourceIds);
        const without = await retrieveKnowledge({ db, embeddings: LEXICAL }, orgId, s.agentId, query, 5, sourceIds);
        expect(withIndex, q.q).to.deep.equal(without);
        const alone = await retrieveKnowledge({ db, embeddings: LEXICAL, indexes }, orgId, s.agentId, { text: q.q }, 5, sourceIds);
        expect(alone, q.q).to.deep.equal(await retrieveKnowledge({ db, embeddings: LEXICAL }, orgId, s.agentId, { text: q.q }, 5, sourceIds));
      }
    }
  });

  it('sees a re-indexed source after the change feed reports it', async () => {
    const s = seeded.find((x) => x.kb.id === 'hotel-en')!;
    const sourceIds = sourcesOf.get(s.agentId)!;
    const query = { text: 'Is there a zeppelin hangar?' };
    expect(await retrieveKnowledge({ db, embeddings: LEXICAL, indexes }, orgId, s.agentId, query, 3, sourceIds)).to.deep.equal([]);
    const changed = nextChange('knowledge_chunks');
    await db('knowledge_sources').where({ org_id: orgId, id: sourceIds[0] }).update({ status: 'processing' });
    await indexChunks(db, orgId, sourceIds[0], [{ ordinal: 0, content: 'Guests may moor a zeppelin in the hangar with notice.' }]);
    await changed;
    const hits = await retrieveKnowledge({ db, embeddings: LEXICAL, indexes }, orgId, s.agentId, query, 3, sourceIds);
    expect(hits.map((h) => h.content)).to.deep.equal(['Guests may moor a zeppelin in the hangar with notice.']);
    expect(hits).to.deep.equal(await retrieveKnowledge({ db, embeddings: LEXICAL }, orgId, s.agentId, query, 3, sourceIds));
  });

  it('holds nothing while the feed is down (changes could be missed): Postgres ranks', async () => {
    const down = new ChangeFeed();
    const idle = new KnowledgeIndexes(down, 30);
    expect(await idle.corpus(db, orgId, sourcesOf.get(seeded[0].agentId)!)).to.equal(null);
  });
});
