/**
 * Chat turns rank their knowledge in the API process (services/knowledge/lexicalIndex.ts, composed by api/app.ts;
 * docs/knowledge.md "Retrieval"): through the real server, a turn runs no full-text ranking or chunk read in
 * Postgres once the index is built, answers with the hits Postgres gives, and a re-indexed source reaches the next
 * turn through the change feed. Real Postgres, the sandbox LLM.
 */
import { expect } from 'chai';
import pg from 'pg';
import { startTestApi, type TestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { createKnowledgeActivities } from '../../activities/knowledge';
import { createLogger } from '../../runtime';
import { createSource, indexChunks } from '../../db/repositories/knowledge';
import { retrieveKnowledge } from '../../services/knowledge/retrieval';
import type { EmbeddingsProvider } from '../../providers/embeddings';
import { ingestInline } from '../helpers/knowledge';

describe('chat turns with the in-process knowledge index', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  after(async () => t?.close());

  it('ranks without a statement once built, with the hits Postgres gives, and sees a re-indexed source', async () => {
    t = await startTestApi('chat_knowledge_index');
    org = await t.org('Index');
    const agent = await t.call('POST', '/agents', { key: org.key, json: { name: 'Knows', voiceId: 'voice_ava' } });
    const agentId = agent.body.data.id as string;
    const source = await createSource(t.db, org.orgId, { agentId, kind: 'text', name: 'Hours', text: 'We are open Monday to Friday from 8am to 6pm. Parking is free behind the building.' }, async () => undefined);
    const acts = createKnowledgeActivities({ db: t.db, config: t.config, logger: createLogger('silent') });
    const ref = { orgId: org.orgId, sourceId: source.id };
    expect((await ingestInline(acts, ref)).status).to.equal('ready');
    await publishDraft(t.db, org, agentId, 'k1');
    const session = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session;
    const say = (content: string) => t.call('POST', `/chat/sessions/${session.id}/messages`, { key: org.key, json: { content } });

    expect((await say('When are you open on Monday?')).status).to.equal(200);
    const statements: string[] = [];
    const seen = (q: { sql: string }) => statements.push(q.sql);
    t.db.on('query', seen);
    const res = await say('Where can I park my car?');
    t.db.off('query', seen);
    expect(res.status, res.text).to.equal(200);
    expect(statements.some((s) => /text_search_config|knowledge_chunks/.test(s)), statements.join('\n')).to.equal(false);

    const lookup = res.body.data.receipt.knowledge[0];
    const lexical: EmbeddingsProvider = { name: 'lexical', model: null, embed: async () => [] };
    const fromPostgres = await retrieveKnowledge({ db: t.db, embeddings: lexical }, org.orgId, agentId, { text: 'Where can I park my car?', earlierUserTurns: ['When are you open on Monday?'] }, lookup.results.length, [source.id]);
    expect(lookup.results.map((r: { chunkId: string; score: number }) => [r.chunkId, r.score])).to.deep.equal(fromPostgres.map((h) => [h.chunkId, h.score]));

    // Re-indexed with new text: the change feed drops the index, and the next turn reads the new chunks.
    const listener = new pg.Client({ connectionString: t.databaseUrl });
    await listener.connect();
    await listener.query('LISTEN acp_changes');
    const notified = new Promise<void>((resolve) => listener.on('notification', (m) => m.payload === `knowledge_chunks:${org.orgId}` && resolve()));
    await t.db('knowledge_sources').where({ org_id: org.orgId, id: source.id }).update({ status: 'processing' });
    await indexChunks(t.db, org.orgId, source.id, [{ ordinal: 0, content: 'Parking is in the garage on Elm Street, level 2.' }]);
    await notified; // delivered to the API's change feed at the same time
    await listener.end();
    const after = await say('Where can I park my car?');
    expect(after.body.data.receipt.knowledge[0].results[0].chunkId).to.not.equal(lookup.results[0].chunkId);
    expect(after.body.data.reply.content).to.contain('Elm Street');
  });
});
