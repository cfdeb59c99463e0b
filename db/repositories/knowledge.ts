/**
 * Knowledge sources and their indexed chunks (spec "Other endpoints": Knowledge). Status moves pending → processing
 * → ready | failed; chunks are replaced and the source marked ready in one transaction, so a source is
 * searchable exactly when it is ready and re-running an ingestion step never duplicates chunks.
 * Retrieval is Postgres full-text search over `knowledge_chunks.tsv` (GIN index) ranked by `ts_rank`.
 */
import type { Knex } from 'knex';
import { prepared, type Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import { attachUpload } from './uploads';
import type { KnowledgeCrawl, KnowledgePreviewHit, KnowledgeSource, KnowledgeSourceKind, KnowledgeSourceStatus } from '../../schemas/types/knowledge';
import { fromColumns, fromNullableColumns, fromTimestampColumns } from '../rows';
import { adoptModelIfNone, insertChunkVectors } from './knowledgeEmbeddings';
import type { TextSearchConfig } from '../../domain/knowledge/language';
import { knowledgeSourceDeletable } from '../../domain/agents/deletes';

type Conn = Db | Knex.Transaction;


/** Maps a stored row to the API shape. */
export function toKnowledgeSource(r: Record<string, any>): KnowledgeSource {
  return {
    ...fromColumns(r, ['id', 'agentId', 'kind']),
    ...fromNullableColumns(r, ['name', 'url', 'fileId']),
    status: r.status,
    ...fromNullableColumns(r, ['failureCode', 'failureReason', 'format', 'title', 'charCount']),
    chunkCount: r.chunk_count ?? 0,
    ...fromTimestampColumns(r, ['createdAt', 'updatedAt', 'readyAt']),
    // Refresh and crawl (docs/knowledge.md "Refresh and crawl").
    ...(r.kind === 'url' ? refreshFields(r) : {}),
  };
}

/** The refresh, crawl and last-check fields of a URL source's row. */
function refreshFields(r: Record<string, any>): Pick<KnowledgeSource, 'refresh' | 'crawl' | 'lastCheck'> {
  return {
    refresh: r.refresh_every_hours ? { everyHours: r.refresh_every_hours } : null,
    crawl: r.crawl ?? null,
    lastCheck: r.last_checked_at
      ? {
          checkedAt: new Date(r.last_checked_at).toISOString(),
          outcome: r.last_check_outcome,
          statusCode: r.last_check_status ?? null,
          failureCode: r.last_check_code ?? null,
          failureReason: r.last_check_reason ?? null,
          pages: r.last_check_pages ?? null,
        }
      : null,
  };
}

const PUBLIC_COLUMNS = [
  'seq', 'id', 'agent_id', 'kind', 'name', 'url', 'file_id', 'status', 'failure_code', 'failure_reason', 'format',
  'title', 'char_count', 'chunk_count', 'created_at', 'updated_at', 'ready_at',
  'refresh_every_hours', 'crawl', 'last_checked_at', 'last_check_outcome', 'last_check_status', 'last_check_code', 'last_check_reason', 'last_check_pages',
];

/** True when the agent exists in the organization (agents table of the agents area: id, org_id). */
export async function agentExists(db: Conn, orgId: string, agentId: string): Promise<boolean> {
  const row = await db('agents').where({ org_id: orgId, id: agentId }).whereNull('archived_at').first('id');
  return !!row;
}

/** The file of a `file` source no longer exists or expired before attachment (404 `file_expired`). */
export class FileExpiredError extends Error {
  constructor(readonly fileId: string) {
    super(`Upload ${fileId} has expired or does not exist; upload the file again`);
    this.name = 'FileExpiredError';
  }
}

/** What a new source is made of (validated by the handler). */
export interface NewKnowledgeSource {
  agentId: string;
  kind: KnowledgeSourceKind;
  name?: string | null;
  url?: string | null;
  fileId?: string | null;
  text?: string | null;
  /** Kind `url`: hours between refreshes (docs/knowledge.md "Refresh and crawl"). */
  refreshEveryHours?: number | null;
  /** Kind `url`: crawl settings. */
  crawl?: KnowledgeCrawl | null;
  /** The id of the source's ingestion workflow, from the source's id, stored by the insert itself (one statement less than `afterInsert`'s answer). */
  workflowIdFor?: (sourceId: string) => string;
}

/**
 * Creates a source (status `pending`) and runs `afterInsert` inside the same transaction (the route records the
 * ingestion workflow's start there: services/workflowStarts.ts): if `afterInsert` throws, nothing is written.
 * A `file` source attaches its upload in the same transaction.
 * @throws FileExpiredError when the upload is gone or expired; whatever `afterInsert` throws
 */
export async function createSource(
  db: Db,
  orgId: string,
  input: NewKnowledgeSource,
  afterInsert: (source: KnowledgeSource, trx: Knex.Transaction) => Promise<string | void>,
): Promise<KnowledgeSource> {
  return db.transaction(async (trx) => {
    let name = input.name ?? null;
    if (input.kind === 'file') {
      const upload = await attachUpload(trx, orgId, input.fileId!);
      if (!upload) throw new FileExpiredError(input.fileId!);
      name ??= upload.filename;
    }
    if (input.kind === 'url') name ??= input.url ?? null;
    if (input.kind === 'text') name ??= firstWords(input.text ?? '');
    const id = newId('ks');
    const storedWorkflowId = input.workflowIdFor?.(id) ?? null;
    const [row] = await trx('knowledge_sources')
      .insert({
        id,
        workflow_id: storedWorkflowId,
        org_id: orgId,
        agent_id: input.agentId,
        kind: input.kind,
        name,
        url: input.kind === 'url' ? input.url : null,
        file_id: input.kind === 'file' ? input.fileId : null,
        text_content: input.kind === 'text' ? input.text : null,
        refresh_every_hours: input.kind === 'url' ? (input.refreshEveryHours ?? null) : null,
        crawl: input.kind === 'url' && input.crawl ? JSON.stringify(input.crawl) : null,
      })
      .returning(PUBLIC_COLUMNS);
    const source = toKnowledgeSource(row);
    const workflowId = await afterInsert(source, trx);
    if (workflowId && workflowId !== storedWorkflowId) await trx('knowledge_sources').where({ org_id: orgId, id: source.id }).update({ workflow_id: workflowId });
    return source;
  });
}

function firstWords(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length <= 60 ? t : `${t.slice(0, 57).replace(/\s+\S*$/, '')}…`;
}

/** One page of an agent's sources, oldest first. @throws InvalidCursorError */
export async function listSources(db: Conn, orgId: string, agentId: string, page: { limit: number; cursor?: string }): Promise<Page<KnowledgeSource>> {
  return keysetPage(db('knowledge_sources').where({ org_id: orgId, agent_id: agentId }).whereNull('deleted_at').select(PUBLIC_COLUMNS), {
    limit: page.limit,
    cursor: page.cursor,
    column: 'seq',
    map: toKnowledgeSource,
  });
}

/** A source by id (API shape), or undefined. */
export async function getSource(db: Conn, orgId: string, sourceId: string): Promise<KnowledgeSource | undefined> {
  const row = await db('knowledge_sources').where({ org_id: orgId, id: sourceId }).whereNull('deleted_at').first(PUBLIC_COLUMNS);
  return row ? toKnowledgeSource(row) : undefined;
}

/** What the ingestion activity needs to fetch a source. */
export interface SourceInput {
  id: string;
  agentId: string;
  kind: KnowledgeSourceKind;
  status: KnowledgeSourceStatus;
  url: string | null;
  fileId: string | null;
  text: string | null;
  /** Kind `url`: crawl settings, or null for a single document. */
  crawl?: KnowledgeCrawl | null;
}

/** A status transition of a source, handed to the caller inside the transaction that makes it (events). */
export interface SourceStatusChange {
  agentId: string;
  sourceId: string;
  status: KnowledgeSourceStatus;
  error?: string | null;
  chunkCount?: number | null;
}

/** Called inside the transaction of a status transition (e.g. to emit `knowledge.source.updated`). */
export type OnSourceChange = (trx: Knex.Transaction, change: SourceStatusChange) => Promise<unknown>;

/**
 * Moves a source to `processing` (from pending; a retry finds it processing already). `onChange`
 * runs only for the pending → processing transition, in its transaction.
 * @param within runs in the same transaction with the source's inputs, whatever its status (a text source stores its
 *   extraction there: one commit, a WAL flush on a durable cluster, instead of two)
 * @returns the source's inputs, or undefined when it does not exist; a source already `ready` or
 *   `failed` is returned unchanged (the caller skips work)
 */
export async function markProcessing(
  db: Db,
  orgId: string,
  sourceId: string,
  onChange?: OnSourceChange,
  within?: (trx: Knex.Transaction, source: SourceInput) => Promise<void>,
): Promise<SourceInput | undefined> {
  const columns = ['id', 'agent_id', 'kind', 'status', 'url', 'file_id', 'text_content', 'crawl'];
  return db.transaction(async (trx) => {
    // The transition answers the source's inputs itself (RETURNING): one statement where a pending source is found.
    const [moved] = await trx('knowledge_sources')
      .where({ org_id: orgId, id: sourceId, status: 'pending' })
      .update({ status: 'processing', processing_started_at: trx.fn.now(), updated_at: trx.fn.now() })
      .returning(columns);
    if (moved && onChange) await onChange(trx, { agentId: moved.agent_id, sourceId, status: 'processing' });
    const r = moved ?? (await trx('knowledge_sources').where({ org_id: orgId, id: sourceId }).first(columns));
    if (!r) return undefined;
    const source: SourceInput = { id: r.id, agentId: r.agent_id, kind: r.kind, status: r.status, url: r.url, fileId: r.file_id, text: r.text_content, crawl: r.crawl ?? null };
    if (within) await within(trx, source);
    return source;
  });
}

/**
 * Stores the extracted text of a processing source (the index step reads it back). A URL source still named by its URL
 * (created without a `name`) takes the page's title as its name (docs/knowledge.md "Sources").
 * @returns its agent's language (BCP 47, agents.language; undefined when the agent is gone), read in the same statement,
 *   or undefined when the source is not processing (nothing stored)
 */
export async function saveExtraction(
  db: Conn,
  orgId: string,
  sourceId: string,
  doc: { format: string; title: string | null; contentType: string | null; text: string },
): Promise<{ agentLanguage: string | undefined } | undefined> {
  const [row] = await db('knowledge_sources')
    .where({ org_id: orgId, id: sourceId, status: 'processing' })
    .update({
      format: doc.format,
      title: doc.title,
      ...(doc.title ? { name: db.raw(`CASE WHEN kind = 'url' AND name = url THEN ?::text ELSE name END`, [doc.title.slice(0, 200)]) } : {}),
      content_type: doc.contentType,
      extracted_text: doc.text,
      char_count: doc.text.length,
      updated_at: db.fn.now(),
    })
    .returning(db.raw('(SELECT a.language FROM agents a WHERE a.org_id = knowledge_sources.org_id AND a.id = knowledge_sources.agent_id) AS agent_language'));
  return row ? { agentLanguage: row.agent_language ?? undefined } : undefined;
}

/**
 * The stored extracted text of a processing source with its agent's language (BCP 47, agents.language; undefined when
 * the agent is gone), read in one statement; undefined when the source is not processing or not extracted yet.
 */
export async function getExtraction(db: Conn, orgId: string, sourceId: string): Promise<{ agentId: string; text: string; agentLanguage: string | undefined } | undefined> {
  const r = await db('knowledge_sources as s')
    .leftJoin('agents as a', function () {
      this.on('a.org_id', '=', 's.org_id').andOn('a.id', '=', 's.agent_id');
    })
    .where({ 's.org_id': orgId, 's.id': sourceId, 's.status': 'processing' })
    .first('s.agent_id', 's.extracted_text', 'a.language');
  return r && typeof r.extracted_text === 'string' ? { agentId: r.agent_id, text: r.extracted_text, agentLanguage: r.language ?? undefined } : undefined;
}

/** What {@link indexChunks} stores besides the chunks (docs/knowledge.md "Retrieval", "Languages"). */
export interface IndexChunksOptions {
  textSearchConfig?: TextSearchConfig;
  embeddings?: { model: string; vectors: readonly (readonly number[])[] };
}

/**
 * Replaces the source's chunks and marks it `ready` in one transaction (idempotent: a retry replaces
 * the same chunks). Does nothing unless the source is `processing`. `onChange` runs for the
 * processing → ready transition, in its transaction.
 * @param chunks ordinal + content, in order
 * @param opts the source's text-search configuration (default `english`) and, when the embeddings provider makes
 *   vectors, one per chunk with their model id (stored in the same transaction; the organization's first vectors make
 *   their model its active one)
 * @returns the number of chunks stored, or undefined when the source was not processing
 */
export async function indexChunks(
  db: Db,
  orgId: string,
  sourceId: string,
  chunks: { ordinal: number; content: string }[],
  onChange?: OnSourceChange,
  opts: IndexChunksOptions = {},
): Promise<number | undefined> {
  const config = opts.textSearchConfig ?? 'english';
  if (opts.embeddings && opts.embeddings.vectors.length !== chunks.length) throw new RangeError('one vector per chunk is needed');
  const n = await db.transaction(async (trx) => {
    const src = await trx('knowledge_sources').where({ org_id: orgId, id: sourceId }).forUpdate().first('agent_id', 'status');
    if (!src || src.status !== 'processing') return undefined;
    await trx('knowledge_chunks').where({ org_id: orgId, source_id: sourceId }).delete();
    const rows = chunks.map((c) => ({ id: newId('chk'), org_id: orgId, agent_id: src.agent_id, source_id: sourceId, ordinal: c.ordinal, content: c.content, text_search_config: config }));
    // 7 parameters per row; stay well below Postgres's 65 535 bind parameters per statement.
    for (let i = 0; i < rows.length; i += 2000) await trx('knowledge_chunks').insert(rows.slice(i, i + 2000));
    if (opts.embeddings && rows.length) {
      const { model, vectors } = opts.embeddings;
      await insertChunkVectors(trx, orgId, model, rows.map((r, i) => ({ chunkId: r.id, agentId: src.agent_id, sourceId, vector: vectors[i] })));
      await adoptModelIfNone(trx, orgId, model);
    }
    await trx('knowledge_sources')
      .where({ org_id: orgId, id: sourceId })
      .update({ status: 'ready', chunk_count: rows.length, ready_at: trx.fn.now(), updated_at: trx.fn.now(), failure_code: null, failure_reason: null, text_search_config: config });
    if (onChange) await onChange(trx, { agentId: src.agent_id, sourceId, status: 'ready', chunkCount: rows.length });
    return rows.length;
  });
  if (n !== undefined) await flushSearchIndex(db);
  return n;
}

/**
 * Merges the GIN index's pending list (fast-update inserts) into the index now, so queries right after
 * an ingestion do not scan a long unsorted list. Best effort: needs ownership of the index.
 */
async function flushSearchIndex(db: Db): Promise<void> {
  try {
    await db.raw(`SELECT gin_clean_pending_list('knowledge_chunks_tsv_idx'::regclass)`);
  } catch {
    // Autovacuum flushes it eventually; a failure here only costs query latency for a while.
  }
}

/**
 * Marks a pending or processing source `failed` with a machine code and a reason; `onChange` runs for
 * that transition, in its transaction. A ready or already failed source is left alone.
 * @returns false when nothing changed
 */
export async function markFailed(db: Db, orgId: string, sourceId: string, code: string, reason: string, onChange?: OnSourceChange): Promise<boolean> {
  return db.transaction(async (trx) => {
    const moved = await trx('knowledge_sources')
      .where({ org_id: orgId, id: sourceId })
      .whereIn('status', ['pending', 'processing'])
      .update({ status: 'failed', failure_code: code, failure_reason: reason.slice(0, 2000), updated_at: trx.fn.now() })
      .returning(['agent_id']);
    if (moved.length && onChange) await onChange(trx, { agentId: moved[0].agent_id, sourceId, status: 'failed', error: `${code}: ${reason}`.slice(0, 2000) });
    return moved.length > 0;
  });
}

/** Chunks considered per query word: bounds the cost of words that occur almost everywhere. */
export const CANDIDATES_PER_TERM = 2000;
/** Distinct query words used (the rest of a very long query is ignored). */
export const MAX_QUERY_TERMS = 32;

/**
 * Full-text retrieval over an agent's chunks. Query words are stemmed with each chunk's own text-search
 * configuration (docs/knowledge.md "Languages": a Spanish source's chunks are searched with the `spanish` stemmer
 * and stop words, an English one's with `english`; the query is parsed once per configuration the agent's sources
 * use) and OR-ed, because a caller's question rarely shares every word with the answer; chunks are ranked with
 * `ts_rank` normalized to 0..1 (normalization 32: rank/(rank+1)), so chunks holding more of the words, more often,
 * rank higher.
 *
 * Cost is bounded: each word contributes at most CANDIDATES_PER_TERM chunks to the ranked set, so a
 * word found in most chunks cannot make a query rank the whole corpus. Below that many matches per
 * word (every corpus under 2,000 chunks) the ranking is exact; above it, chunks holding the rarer,
 * more telling words are always considered and a common word's share is an arbitrary subset.
 * @param limit 1..50
 * @param sourceIds only chunks of these sources (a conversation's pinned version lists its sources); all when omitted
 * @returns best chunks first; none when the query has no searchable words
 */
export async function searchChunks(db: Conn, orgId: string, agentId: string, query: string, limit: number, sourceIds?: readonly string[]): Promise<KnowledgePreviewHit[]> {
  if (sourceIds && sourceIds.length === 0) return [];
  // Chunks exist only for ready sources (indexChunks writes them and sets `ready` in one
  // transaction), so no status filter is needed. Equal ranks keep document order (source, then ordinal), so a ranking
  // is the same on every run. MATERIALIZED keeps the plan in this order: the agent's
  // configurations → words per configuration → bounded candidates → rank once each → join the sources of the top rows only.
  const src = sourceIds ? ' AND c.source_id = ANY(?)' : '';
  const sql = `WITH cfg AS MATERIALIZED (
       SELECT DISTINCT text_search_config AS cfg FROM knowledge_sources WHERE org_id = ? AND agent_id = ?${sourceIds ? ' AND id = ANY(?)' : ''}
     ),
     lx AS MATERIALIZED (
       SELECT cfg, quoted, to_tsquery('simple', quoted) AS tq
         FROM (SELECT cfg, quoted, row_number() OVER (PARTITION BY cfg ORDER BY quoted) AS n
                 FROM (SELECT DISTINCT cfg.cfg, '''' || replace(replace(lex, '\\', '\\\\'), '''', '''''') || '''' AS quoted
                         FROM cfg CROSS JOIN LATERAL unnest(tsvector_to_array(knowledge_tsvector(cfg.cfg, ?))) AS lex) w) words
        WHERE n <= ${MAX_QUERY_TERMS}
     ),
     q AS MATERIALIZED (SELECT cfg, to_tsquery('simple', string_agg(quoted, ' | ')) AS q FROM lx GROUP BY cfg),
     cand AS MATERIALIZED (
       SELECT DISTINCT m.id
         FROM lx CROSS JOIN LATERAL (
           SELECT c.id FROM knowledge_chunks c
            WHERE c.tsv @@ lx.tq AND c.org_id = ? AND c.agent_id = ? AND c.text_search_config = lx.cfg${src}
            LIMIT ${CANDIDATES_PER_TERM}
         ) m
     ),
     top AS MATERIALIZED (
       SELECT c.id, c.source_id, c.ordinal, c.content, ts_rank(c.tsv, q.q, 32) AS score
         FROM knowledge_chunks c JOIN q ON q.cfg = c.text_search_config
        WHERE c.id IN (SELECT id FROM cand)
        ORDER BY score DESC, c.source_id, c.ordinal
        LIMIT ?
     )
     SELECT top.id, top.ordinal, top.content, top.score, s.id AS source_id, s.kind, s.name, s.title, s.url
       FROM top JOIN knowledge_sources s ON s.id = top.source_id AND s.org_id = ?
      ORDER BY top.score DESC, top.source_id, top.ordinal`;
  const ids = sourceIds ? [[...sourceIds]] : [];
  const res = await db.raw(sql, [orgId, agentId, ...ids, query, orgId, agentId, ...ids, limit, orgId]).options(prepared(sql));
  return (res.rows as any[]).map(toPreviewHit);
}

/** One ranked list of {@link rankChunkLists}: chunk ids best first, with their `ts_rank` scores (0..1, 6 decimals). */
export type RankedChunks = Array<{ chunkId: string; score: number }>;

/**
 * {@link searchChunks}' ranking of several queries in one statement, ids and scores only (a retrieval's full-text
 * lists, one per recent user turn: services/knowledge/retrieval.ts). Each list is the order `searchChunks` gives
 * its query (same words, candidates, `ts_rank` and ties by source and ordinal); the chunks' text is read
 * afterwards for the fused hits alone (`chunksByIds`).
 * @param limit chunks per list, 1..50
 * @param sourceIds only chunks of these sources; all when omitted
 * @returns one list per query, in the order of `queries`
 */
export async function rankChunkLists(db: Conn, orgId: string, agentId: string, queries: readonly string[], limit: number, sourceIds?: readonly string[]): Promise<RankedChunks[]> {
  const lists: RankedChunks[] = queries.map(() => []);
  if (!queries.length || (sourceIds && sourceIds.length === 0)) return lists;
  const src = sourceIds ? ' AND c.source_id = ANY(?)' : '';
  const sql = `WITH cfg AS MATERIALIZED (
       SELECT DISTINCT text_search_config AS cfg FROM knowledge_sources WHERE org_id = ? AND agent_id = ?${sourceIds ? ' AND id = ANY(?)' : ''}
     ),
     qs AS MATERIALIZED (SELECT (ord - 1)::int AS qi, text FROM unnest(?::text[]) WITH ORDINALITY AS t(text, ord)),
     lx AS MATERIALIZED (
       SELECT qi, cfg, quoted, to_tsquery('simple', quoted) AS tq
         FROM (SELECT qi, cfg, quoted, row_number() OVER (PARTITION BY qi, cfg ORDER BY quoted) AS n
                 FROM (SELECT DISTINCT qs.qi, cfg.cfg, '''' || replace(replace(lex, '\\', '\\\\'), '''', '''''') || '''' AS quoted
                         FROM qs CROSS JOIN cfg CROSS JOIN LATERAL unnest(tsvector_to_array(knowledge_tsvector(cfg.cfg, qs.text))) AS lex) w) words
        WHERE n <= ${MAX_QUERY_TERMS}
     ),
     q AS MATERIALIZED (SELECT qi, cfg, to_tsquery('simple', string_agg(quoted, ' | ' ORDER BY quoted)) AS q FROM lx GROUP BY qi, cfg),
     cand AS MATERIALIZED (
       SELECT DISTINCT lx.qi, m.id
         FROM lx CROSS JOIN LATERAL (
           SELECT c.id FROM knowledge_chunks c
            WHERE c.tsv @@ lx.tq AND c.org_id = ? AND c.agent_id = ? AND c.text_search_config = lx.cfg${src}
            LIMIT ${CANDIDATES_PER_TERM}
         ) m
     ),
     ranked AS MATERIALIZED (
       SELECT cand.qi, c.id, ts_rank(c.tsv, q.q, 32) AS score, c.source_id, c.ordinal
         FROM cand JOIN knowledge_chunks c ON c.id = cand.id JOIN q ON q.qi = cand.qi AND q.cfg = c.text_search_config
     )
     SELECT qi, id, score FROM (
       SELECT qi, id, score, row_number() OVER (PARTITION BY qi ORDER BY score DESC, source_id, ordinal) AS rn FROM ranked
     ) r WHERE rn <= ? ORDER BY qi, rn`;
  const ids = sourceIds ? [[...sourceIds]] : [];
  const res = await db.raw(sql, [orgId, agentId, ...ids, [...queries], orgId, agentId, ...ids, limit]).options(prepared(sql));
  for (const r of res.rows as Array<{ qi: number; id: string; score: number }>) lists[r.qi].push({ chunkId: r.id, score: Number(Number(r.score).toFixed(6)) });
  return lists;
}

/** A chunk row joined with its source → the API's hit shape. */
function toPreviewHit(r: any): KnowledgePreviewHit {
  return {
    chunkId: r.id,
    ordinal: r.ordinal,
    content: r.content,
    score: Number(Number(r.score).toFixed(6)),
    source: { id: r.source_id, kind: r.kind, name: r.name ?? null, title: r.title ?? null, url: r.url ?? null },
  };
}

/**
 * Chunks by id with their sources, in the order of `ids` (ids not found, or of another organization, are left out).
 * @param scores the score each hit carries, by chunk id (default 0)
 */
export async function chunksByIds(db: Conn, orgId: string, ids: readonly string[], scores: ReadonlyMap<string, number> = new Map()): Promise<KnowledgePreviewHit[]> {
  if (!ids.length) return [];
  const res = await db.raw(
    `SELECT c.id, c.ordinal, c.content, s.id AS source_id, s.kind, s.name, s.title, s.url
       FROM knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id AND s.org_id = c.org_id
      WHERE c.org_id = ? AND c.id = ANY(?)`,
    [orgId, [...ids]],
  );
  const byId = new Map((res.rows as any[]).map((r) => [r.id as string, r]));
  return ids.filter((id) => byId.has(id)).map((id) => toPreviewHit({ ...byId.get(id), score: scores.get(id) ?? 0 }));
}

/**
 * Ids of the sources in the agent's draft (not deleted), for retrieval over the draft (the knowledge preview):
 * chunks of deleted sources stay for the published versions that list them (docs/api-notes.md "Deletes").
 */
export async function draftSourceIds(db: Conn, orgId: string, agentId: string): Promise<string[]> {
  return db('knowledge_sources').where({ org_id: orgId, agent_id: agentId }).whereNull('deleted_at').orderBy('seq').pluck('id');
}

/** What deleting a source found (docs/api-notes.md "Deletes"). */
export type SourceDeletion =
  | { kind: 'not_found' }
  | { kind: 'ingesting'; status: KnowledgeSourceStatus }
  | { kind: 'deleted'; source: KnowledgeSource; deletedAt: string; chunksKept: boolean };

/**
 * Deletes a `ready` or `failed` source of an agent: it leaves the draft (lists, preview, the next publish) and is
 * marked `deleted_at`. Its chunks stay when a frozen version's snapshot lists it (a conversation pinned to that
 * version still retrieves them by source id); otherwise they are removed. `inTransaction` runs in the same
 * transaction (the event). A pending or processing source is refused (its ingestion is still writing).
 */
export async function deleteSource(
  db: Db,
  orgId: string,
  agentId: string,
  sourceId: string,
  inTransaction: (trx: Knex.Transaction, d: { source: KnowledgeSource; deletedAt: string; chunksKept: boolean }) => Promise<unknown>,
): Promise<SourceDeletion> {
  return db.transaction(async (trx) => {
    const row = await trx('knowledge_sources').where({ org_id: orgId, agent_id: agentId, id: sourceId }).whereNull('deleted_at').forUpdate().first(PUBLIC_COLUMNS);
    if (!row) return { kind: 'not_found' as const };
    if (!knowledgeSourceDeletable(row.status)) return { kind: 'ingesting' as const, status: row.status };
    const [{ deleted_at }] = await trx('knowledge_sources').where({ org_id: orgId, id: sourceId }).update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() }).returning('deleted_at');
    const pinned = await trx('agent_versions')
      .where({ org_id: orgId, agent_id: agentId })
      .whereRaw(`snapshot -> 'knowledge' @> ?::jsonb`, [JSON.stringify([{ id: sourceId }])])
      .first('id');
    if (!pinned) await trx('knowledge_chunks').where({ org_id: orgId, source_id: sourceId }).delete();
    const d = { source: toKnowledgeSource(row), deletedAt: (deleted_at as Date).toISOString(), chunksKept: !!pinned };
    await inTransaction(trx, d);
    return { kind: 'deleted' as const, ...d };
  });
}
