/**
 * Refresh and crawl of URL knowledge sources (docs/knowledge.md "Refresh and crawl"): the validators and content
 * hash of the last fetch, the pages of a crawling source, the atomic swap of one document's chunks (the old chunks
 * serve until the transaction that replaces them commits) and the record of each check on the source.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import { fromColumns, fromNullableColumns, rowMapper } from '../rows';
import { adoptModelIfNone, insertChunkVectors } from './knowledgeEmbeddings';
import type { OnSourceChange } from './knowledge';
import type { KnowledgeCrawl, KnowledgeSourceCheck, KnowledgeCrawlPage, KnowledgeSourceStatus } from '../../schemas/types/knowledge';
import type { TextSearchConfig } from '../../domain/knowledge/language';

type Conn = Db | Knex.Transaction;

/** Validators and hash of a fetched document (RFC 9110 §8.8). */
export interface FetchValidators {
  etag: string | null;
  lastModified: string | null;
  contentHash: string | null;
}

/** What a refresh needs of its source. */
export interface RefreshTarget extends FetchValidators {
  id: string;
  agentId: string;
  kind: string;
  status: KnowledgeSourceStatus;
  url: string | null;
  crawl: KnowledgeCrawl | null;
  refreshEveryHours: number | null;
  chunkCount: number;
  /** True once the source was deleted (its schedule should go). */
  deleted: boolean;
}

const toRefreshTarget = rowMapper<RefreshTarget>({
  id: 'value',
  agentId: 'value',
  kind: 'value',
  status: 'value',
  url: 'value',
  crawl: 'nullable',
  refreshEveryHours: 'nullable',
  chunkCount: (r) => r.chunk_count ?? 0,
  etag: 'nullable',
  lastModified: 'nullable',
  contentHash: 'nullable',
  deleted: (r) => !!r.deleted_at,
});

/** The source a refresh works on, deleted ones included (flagged), or undefined when it never existed. */
export async function getRefreshTarget(db: Conn, orgId: string, sourceId: string): Promise<RefreshTarget | undefined> {
  const r = await db('knowledge_sources')
    .where({ org_id: orgId, id: sourceId })
    .first('id', 'agent_id', 'kind', 'status', 'url', 'crawl', 'refresh_every_hours', 'chunk_count', 'etag', 'last_modified', 'content_hash', 'deleted_at');
  return r ? toRefreshTarget(r) : undefined;
}

/** Stores the validators and hash of the document the ingestion just fetched (the first refresh can then answer 304). */
export async function saveSourceValidators(db: Conn, orgId: string, sourceId: string, v: FetchValidators): Promise<void> {
  await db('knowledge_sources').where({ org_id: orgId, id: sourceId }).update({ etag: v.etag, last_modified: v.lastModified, content_hash: v.contentHash });
}

/** Sets or clears the refresh interval of a URL source. @returns false when the source does not exist (or is deleted) */
export async function setRefreshInterval(db: Conn, orgId: string, agentId: string, sourceId: string, everyHours: number | null): Promise<boolean> {
  const n = await db('knowledge_sources')
    .where({ org_id: orgId, agent_id: agentId, id: sourceId })
    .whereNull('deleted_at')
    .update({ refresh_every_hours: everyHours, updated_at: db.fn.now() });
  return n > 0;
}

/** A crawled page's stored validators, by URL. */
export interface KnownPage extends FetchValidators {
  id: string;
  url: string;
  status: 'ready' | 'failed';
}

/** The pages of a crawling source, oldest first. */
export async function knownPages(db: Conn, orgId: string, sourceId: string): Promise<KnownPage[]> {
  const rows = await db('knowledge_source_pages').where({ org_id: orgId, source_id: sourceId }).orderBy('seq').select('id', 'url', 'status', 'etag', 'last_modified', 'content_hash');
  return rows.map((r: any) => ({ id: r.id, url: r.url, status: r.status, etag: r.etag ?? null, lastModified: r.last_modified ?? null, contentHash: r.content_hash ?? null }));
}

/**
 * The page row of `url` in a crawling source, created (status `failed`, `not_checked`) when new.
 * @returns its id
 */
export async function ensurePage(db: Conn, orgId: string, sourceId: string, url: string): Promise<string> {
  const [row] = await db('knowledge_source_pages')
    .insert({ id: newId('kpg'), org_id: orgId, source_id: sourceId, url, status: 'failed', failure_code: 'not_checked', failure_reason: 'Not fetched yet' })
    .onConflict(['source_id', 'url'])
    .merge({ updated_at: db.fn.now() })
    .returning('id');
  return row.id;
}

/** Outcome of one page's check that did not re-index it: unchanged (validators refreshed) or failed (chunks kept). */
export async function recordPageCheck(
  db: Conn,
  orgId: string,
  pageId: string,
  check: { outcome: 'unchanged' | 'failed'; httpStatus: number | null; failureCode?: string; failureReason?: string; validators?: Partial<FetchValidators> },
): Promise<void> {
  const patch: Record<string, unknown> = { last_outcome: check.outcome, http_status: check.httpStatus, checked_at: db.fn.now(), updated_at: db.fn.now() };
  if (check.outcome === 'failed') Object.assign(patch, { status: 'failed', failure_code: check.failureCode ?? 'fetch_failed', failure_reason: (check.failureReason ?? '').slice(0, 2000) });
  if (check.validators?.etag !== undefined) patch.etag = check.validators.etag;
  if (check.validators?.lastModified !== undefined) patch.last_modified = check.validators.lastModified;
  await db('knowledge_source_pages').where({ org_id: orgId, id: pageId }).update(patch);
}

/** The new content of one document: its chunks (with vectors when the embeddings provider makes them) and metadata. */
export interface DocumentVersion {
  chunks: { ordinal: number; content: string }[];
  textSearchConfig: TextSearchConfig;
  embeddings?: { model: string; vectors: readonly (readonly number[])[] };
  format: string;
  title: string | null;
  contentType: string | null;
  text: string;
  httpStatus: number;
  validators: FetchValidators;
}

/**
 * Swaps one document's chunks in one transaction: the old chunks of the document (the source's own when `pageId`
 * is null, else the page's) are deleted and the new ones inserted, with the document's hash and validators, and
 * the source's chunk count recounted. Readers see the old chunks until the commit, then only the new ones.
 * @returns the source's chunk count after the swap, or undefined when the source is gone or deleted (nothing written)
 */
export async function swapDocumentChunks(db: Db, orgId: string, sourceId: string, pageId: string | null, doc: DocumentVersion): Promise<number | undefined> {
  if (doc.embeddings && doc.embeddings.vectors.length !== doc.chunks.length) throw new RangeError('one vector per chunk is needed');
  return db.transaction(async (trx) => {
    const src = await trx('knowledge_sources').where({ org_id: orgId, id: sourceId }).whereNull('deleted_at').forUpdate().first('agent_id');
    if (!src) return undefined;
    const old = trx('knowledge_chunks').where({ org_id: orgId, source_id: sourceId });
    await (pageId ? old.where({ page_id: pageId }) : old.whereNull('page_id')).delete();
    const rows = doc.chunks.map((c) => ({
      id: newId('chk'),
      org_id: orgId,
      agent_id: src.agent_id,
      source_id: sourceId,
      page_id: pageId,
      ordinal: c.ordinal,
      content: c.content,
      text_search_config: doc.textSearchConfig,
    }));
    // 8 parameters per row; stay well below Postgres's 65 535 bind parameters per statement.
    for (let i = 0; i < rows.length; i += 2000) await trx('knowledge_chunks').insert(rows.slice(i, i + 2000));
    if (doc.embeddings && rows.length) {
      const { model, vectors } = doc.embeddings;
      await insertChunkVectors(trx, orgId, model, rows.map((r, i) => ({ chunkId: r.id, agentId: src.agent_id, sourceId, vector: vectors[i] })));
      await adoptModelIfNone(trx, orgId, model);
    }
    const v = { etag: doc.validators.etag, last_modified: doc.validators.lastModified, content_hash: doc.validators.contentHash };
    if (pageId) {
      await trx('knowledge_source_pages')
        .where({ org_id: orgId, id: pageId })
        .update({ ...v, status: 'ready', failure_code: null, failure_reason: null, http_status: doc.httpStatus, format: doc.format, title: doc.title, char_count: doc.text.length, chunk_count: rows.length, last_outcome: 'updated', checked_at: trx.fn.now(), updated_at: trx.fn.now() });
    }
    const [{ n }] = await trx('knowledge_chunks').where({ org_id: orgId, source_id: sourceId }).count({ n: '*' });
    const sourcePatch: Record<string, unknown> = { chunk_count: Number(n), updated_at: trx.fn.now(), text_search_config: doc.textSearchConfig };
    if (!pageId) Object.assign(sourcePatch, v, { format: doc.format, title: doc.title, content_type: doc.contentType, extracted_text: doc.text, char_count: doc.text.length });
    await trx('knowledge_sources').where({ org_id: orgId, id: sourceId }).update(sourcePatch);
    return Number(n);
  });
}

/** One check of a source, as recorded on it. */
export interface SourceCheck {
  outcome: KnowledgeSourceCheck['outcome'];
  statusCode: number | null;
  failureCode?: string | null;
  failureReason?: string | null;
  pages?: KnowledgeSourceCheck['pages'];
  /** Single-document source answered 304 or the same bytes: the validators to keep. */
  validators?: Partial<FetchValidators>;
}

/**
 * Records a check on the source (last-check fields) and moves its status: a pending, processing or failed source
 * becomes `ready` when the check leaves it with chunks, `failed` (code and reason) when it does not; a ready source
 * stays ready whatever the outcome (its chunks keep serving). `onChange` runs in the same transaction for a status
 * change or a re-index (`updated`).
 * @returns the status and chunk count after the check, or undefined when the source is gone or deleted
 */
export async function recordSourceCheck(
  db: Db,
  orgId: string,
  sourceId: string,
  check: SourceCheck,
  onChange?: OnSourceChange,
): Promise<{ status: KnowledgeSourceStatus; chunkCount: number } | undefined> {
  return db.transaction(async (trx) => {
    const src = await trx('knowledge_sources').where({ org_id: orgId, id: sourceId }).whereNull('deleted_at').forUpdate().first('agent_id', 'status', 'chunk_count');
    if (!src) return undefined;
    const patch: Record<string, unknown> = {
      last_checked_at: trx.fn.now(),
      last_check_outcome: check.outcome,
      last_check_status: check.statusCode,
      last_check_code: check.outcome === 'failed' ? (check.failureCode ?? 'fetch_failed') : null,
      last_check_reason: check.outcome === 'failed' ? (check.failureReason ?? '').slice(0, 2000) : null,
      last_check_pages: check.pages ? JSON.stringify(check.pages) : null,
      updated_at: trx.fn.now(),
    };
    if (check.validators?.etag !== undefined) patch.etag = check.validators.etag;
    if (check.validators?.lastModified !== undefined) patch.last_modified = check.validators.lastModified;
    if (check.validators?.contentHash !== undefined) patch.content_hash = check.validators.contentHash;
    let status: KnowledgeSourceStatus = src.status;
    const hasChunks = (src.chunk_count ?? 0) > 0;
    if (src.status !== 'ready') {
      if (check.outcome !== 'failed' && (hasChunks || check.outcome === 'updated')) {
        status = 'ready';
        Object.assign(patch, { status, ready_at: trx.fn.now(), failure_code: null, failure_reason: null });
      } else if (check.outcome === 'failed' || !hasChunks) {
        status = 'failed';
        const code = check.failureCode ?? 'empty_content';
        Object.assign(patch, { status, failure_code: code, failure_reason: (check.failureReason ?? 'No page could be indexed').slice(0, 2000) });
      }
    }
    await trx('knowledge_sources').where({ org_id: orgId, id: sourceId }).update(patch);
    if (onChange && (status !== src.status || check.outcome === 'updated')) {
      const error = status === 'failed' ? `${check.failureCode ?? 'empty_content'}: ${check.failureReason ?? ''}`.slice(0, 2000) : undefined;
      await onChange(trx, { agentId: src.agent_id, sourceId, status, chunkCount: src.chunk_count ?? 0, ...(error ? { error } : {}) });
    }
    return { status, chunkCount: src.chunk_count ?? 0 };
  });
}

/** Maps a page row to the API shape. */
function toPage(r: Record<string, any>): KnowledgeCrawlPage {
  return {
    ...fromColumns(r, ['id', 'sourceId', 'url', 'status']),
    ...fromNullableColumns(r, ['failureCode', 'failureReason', 'httpStatus', 'format', 'title', 'lastOutcome']),
    chunkCount: r.chunk_count ?? 0,
    checkedAt: r.checked_at ? new Date(r.checked_at).toISOString() : null,
  } as KnowledgeCrawlPage;
}

/** One page of a crawling source's pages, oldest first. @throws InvalidCursorError */
export async function listPages(db: Conn, orgId: string, sourceId: string, page: { limit: number; cursor?: string }): Promise<Page<KnowledgeCrawlPage>> {
  return keysetPage(
    db('knowledge_source_pages')
      .where({ org_id: orgId, source_id: sourceId })
      .select('seq', 'id', 'source_id', 'url', 'status', 'failure_code', 'failure_reason', 'http_status', 'format', 'title', 'chunk_count', 'last_outcome', 'checked_at'),
    { limit: page.limit, cursor: page.cursor, column: 'seq', map: toPage },
  );
}
