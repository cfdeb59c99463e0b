/**
 * Semantic retrieval wired where it runs: the API (api/server.ts) composed with an OpenAI-compatible embeddings
 * provider (the loopback double of test/helpers/embeddings.ts), a worker of the service's workflows whose ingestion
 * embeds chunks in the source's language, the knowledge preview and a conversation turn's retrieval ranking by hybrid
 * search, and the re-embedding workflow `knowledge-reembed/{orgId}` after the embeddings model changes
 * (docs/knowledge.md "Retrieval", "Changing the embeddings model").
 */
import { expect } from 'chai';
import { createKnowledgeActivities } from '../../activities/knowledge';
import { createKnowledgeReembedActivities } from '../../activities/knowledgeReembed';
import { getEmbeddingState } from '../../db/repositories/knowledgeEmbeddings';
import { searchChunks } from '../../db/repositories/knowledge';
import { createLogger } from '../../runtime';
import { createLlm } from '../../providers/llm';
import { createEmbeddings, EmbeddingsError, type EmbeddingsProvider } from '../../providers/embeddings';
import { startKnowledgeReembeds } from '../../services/knowledge/reembed';
import { turnPorts } from '../../services/conversations/service';
import { workflowIds } from '../../temporal.config';
import { reembedProgressQuery } from '../../workflows/definitions';
import { startTestApi, type TestApi } from '../helpers/api';
import { compiledAgent } from '../helpers/agents';
import { startEmbeddingsStub } from '../helpers/embeddings';
import { sendError, startOpenAiStub, type OpenAiStub } from '../helpers/llm';
import { testTemporal } from '../helpers/temporal';
import { until } from '../helpers/wait';

const SPANISH_FAQ = [
  'Nuestro servicio de atención al cliente atiende de lunes a viernes de 8:00 a 22:00 y los sábados de 9:00 a 15:00. Los domingos y festivos solo está disponible el chat.',
  'Si se queda sin conexión, reinicie el router. Si la avería continúa, el servicio técnico está disponible las 24 horas y envía un técnico en un plazo de 48 horas.',
  'La tarifa de fibra de 300 Mb cuesta 29 euros al mes y la de 1 Gb cuesta 39 euros al mes. Todas incluyen llamadas ilimitadas y el alquiler del router.',
].join('\n\n');

/** A provider whose model can be switched, as a restart with another EMBEDDINGS_MODEL would. */
function switchable(initial: EmbeddingsProvider): { provider: EmbeddingsProvider; use(p: EmbeddingsProvider): void } {
  let current = initial;
  return {
    provider: {
      get name() {
        return current.name;
      },
      get model() {
        return current.model;
      },
      embed: (texts, opts) => current.embed(texts, opts),
    },
    use: (p) => {
      current = p;
    },
  };
}

describe('semantic knowledge retrieval, wired (API, worker, re-embedding workflow)', function () {
  this.timeout(120_000);
  let stub: OpenAiStub;
  let t: TestApi;
  let org: { orgId: string; key: string };
  let agentId: string;
  let sourceId: string;
  const embeddingsFor = (model: string) =>
    createEmbeddings({ EMBEDDINGS_PROVIDER: 'openai', EMBEDDINGS_BASE_URL: stub.baseUrl, EMBEDDINGS_API_KEY: 'emb-key', EMBEDDINGS_MODEL: model, EMBEDDINGS_DIMENSIONS: '64' });
  let holder: ReturnType<typeof switchable>;

  before(async () => {
    stub = await startEmbeddingsStub();
    holder = switchable(embeddingsFor('concept-v1'));
    t = await startTestApi('knowledge_hybrid', {}, {
      providers: { embeddings: holder.provider },
      worker: (deps) => ({ ...createKnowledgeActivities(deps, { embeddings: holder.provider, chunking: { targetChars: 220, overlapChars: 0 } }), ...createKnowledgeReembedActivities(deps, { embeddings: holder.provider }) }),
    });
    org = await t.org('Hybrid Org');
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Soporte', language: 'es-ES' } })).body.data.id;
  });
  after(async () => {
    await t?.close();
    await stub?.close();
  });

  it('ingests a Spanish source with the spanish configuration and one vector per chunk, of the configured model', async () => {
    const res = await t.call('POST', `/agents/${agentId}/knowledge/sources`, { key: org.key, json: { kind: 'text', text: SPANISH_FAQ } });
    expect(res.status).to.equal(202);
    sourceId = res.body.data.id;
    await until(async () => (await t.db('knowledge_sources').where({ id: sourceId }).first('status'))?.status === 'ready' || undefined, 60_000, 'source ready');
    const chunks = await t.db('knowledge_chunks').where({ org_id: org.orgId, source_id: sourceId }).select('id', 'text_search_config');
    expect(chunks).to.have.length(3);
    expect(chunks.every((c: any) => c.text_search_config === 'spanish')).to.equal(true);
    const vectors = await t.db('knowledge_chunk_embeddings').where({ org_id: org.orgId, source_id: sourceId }).select('model', 'dims');
    expect(vectors).to.have.length(chunks.length);
    expect(vectors.every((v: any) => v.model === 'concept-v1@64' && v.dims === 64)).to.equal(true);
    const call = stub.requests.find((r) => r.path.endsWith('/embeddings'))!;
    expect(call.headers.authorization).to.equal('Bearer emb-key');
    expect(call.body).to.include({ model: 'concept-v1', dimensions: 64, encoding_format: 'float' });
    expect((await getEmbeddingState(t.db, org.orgId)).activeModel).to.equal('concept-v1@64');
  });

  it('previews by hybrid retrieval: a Spanish paraphrase finds the opening hours full-text search misses', async () => {
    const res = await t.call('POST', `/agents/${agentId}/knowledge/preview`, { key: org.key, json: { query: '¿Cuándo abren?', limit: 3 } });
    expect(res.status).to.equal(200);
    expect(res.body.data.results[0].content).to.match(/^Nuestro servicio de atención/);
    const lexical = await searchChunks(t.db, org.orgId, agentId, '¿Cuándo abren?', 3);
    expect(lexical.map((h) => h.content).filter((c) => c.startsWith('Nuestro servicio'))).to.deep.equal([]);
  });

  it("retrieves for a conversation turn from the person's recent turns", async () => {
    const c = { orgId: org.orgId, agentId, id: 'cnv_test', channel: 'chat', variables: {} } as any;
    const agent = compiledAgent({ knowledge: [{ id: sourceId, title: 'FAQ', kind: 'text', chunkCount: 3 }] } as any);
    const ports = turnPorts({ db: t.db, llm: createLlm({}), http: null as any, embeddings: holder.provider }, c, agent);
    const [hit] = await ports.searchKnowledge('¿Y cuánto cuesta al mes?', 3, ['Quiero contratar la fibra de 1 Gb']);
    expect(hit.content).to.match(/^La tarifa de fibra/);
  });

  it('re-embeds the organization after the model changes, old vectors serving until the new ones are complete', async () => {
    holder.use(embeddingsFor('concept-v2'));
    const started = await startKnowledgeReembeds({ db: t.db, temporal: { client: (await testTemporal()).client, taskQueue: t.taskQueue! }, embeddings: holder.provider });
    expect(started).to.deep.equal([org.orgId]);
    const handle = (await testTemporal()).client.workflow.getHandle(workflowIds.knowledgeReembed(org.orgId));
    const result = await handle.result();
    expect(result).to.deep.include({ model: 'concept-v2@64', total: 3, done: 3 });
    expect(await handle.query(reembedProgressQuery)).to.deep.include({ status: 'complete', done: 3, total: 3 });
    const state = await getEmbeddingState(t.db, org.orgId);
    expect(state).to.deep.include({ activeModel: 'concept-v2@64', targetModel: null });
    const models = await t.db('knowledge_chunk_embeddings').where({ org_id: org.orgId }).distinct('model');
    expect(models.map((m: any) => m.model)).to.deep.equal(['concept-v2@64']);
    // Nothing left to do: a second reconciliation starts nothing.
    expect(await startKnowledgeReembeds({ db: t.db, temporal: { client: (await testTemporal()).client, taskQueue: t.taskQueue! }, embeddings: holder.provider })).to.deep.equal([]);
  });

  it('keeps serving the old vectors while a re-embedding is incomplete, embedding queries with the old model', async () => {
    const deps = { db: t.db, config: t.config, logger: createLogger('silent') };
    holder.use(embeddingsFor('concept-v3'));
    const acts = createKnowledgeReembedActivities(deps, { embeddings: holder.provider });
    const begun = await acts.beginKnowledgeReembed({ orgId: org.orgId });
    expect(begun).to.deep.equal({ model: 'concept-v3@64', total: 3, done: 0 });
    const before = stub.requests.length;
    const res = await t.call('POST', `/agents/${agentId}/knowledge/preview`, { key: org.key, json: { query: '¿Cuándo abren?', limit: 3 } });
    expect(res.body.data.results[0].content).to.match(/^Nuestro servicio de atención/);
    const queryCall = stub.requests.slice(before).find((r) => r.path.endsWith('/embeddings'))!;
    expect(queryCall.body.model).to.equal('concept-v2');
    const batch = await acts.embedKnowledgeBatch({ orgId: org.orgId, model: 'concept-v3@64' });
    expect(batch).to.deep.include({ total: 3, done: 3, remaining: false });
    expect((await getEmbeddingState(t.db, org.orgId)).activeModel).to.equal('concept-v2@64');
    await acts.completeKnowledgeReembed({ orgId: org.orgId, model: 'concept-v3@64' });
    expect((await getEmbeddingState(t.db, org.orgId)).activeModel).to.equal('concept-v3@64');
  });
});

describe('OpenAI-compatible embeddings adapter (loopback server)', () => {
  let stub: OpenAiStub;
  afterEach(async () => stub?.close());

  it('puts vectors back in input order and scales them to unit length', async () => {
    stub = await startOpenAiStub((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 1, embedding: [0, 2] }, { object: 'embedding', index: 0, embedding: [3, 4] }], model: 'm', usage: { prompt_tokens: 2, total_tokens: 2 } }));
    });
    const e = createEmbeddings({ EMBEDDINGS_PROVIDER: 'openai', EMBEDDINGS_BASE_URL: stub.baseUrl, EMBEDDINGS_API_KEY: 'k', EMBEDDINGS_MODEL: 'm' });
    expect(await e.embed(['a', 'b'])).to.deep.equal([[0.6, 0.8], [0, 1]]);
    expect(stub.requests[0].body).to.not.have.property('dimensions');
  });

  it('maps a refused key to a non-retryable auth error and a 503 to a retryable one', async () => {
    let status = 401;
    stub = await startOpenAiStub((req, res) => sendError(res, status, { message: 'nope' }));
    const e = createEmbeddings({ EMBEDDINGS_PROVIDER: 'openai', EMBEDDINGS_BASE_URL: stub.baseUrl, EMBEDDINGS_API_KEY: 'k' });
    const auth = await e.embed(['a']).catch((err) => err);
    expect(auth).to.be.instanceOf(EmbeddingsError);
    expect(auth).to.include({ kind: 'auth', retryable: false });
    status = 503;
    const down = await e.embed(['a']).catch((err) => err);
    expect(down).to.include({ kind: 'unavailable', retryable: true });
  });

  it('refuses EMBEDDINGS_PROVIDER=openai without a key, and the sandbox makes no vectors', async () => {
    expect(() => createEmbeddings({ EMBEDDINGS_PROVIDER: 'openai' })).to.throw(/EMBEDDINGS_API_KEY/);
    expect(() => createEmbeddings({ EMBEDDINGS_PROVIDER: 'bogus' })).to.throw(/not supported/);
    const sandbox = createEmbeddings({});
    expect(sandbox.model).to.equal(null);
    expect(await sandbox.embed(['a']).catch((err) => err.kind)).to.equal('no_vectors');
  });
});
