/**
 * Knowledge ingestion activities (workflow `knowledge-source/{sourceId}`, workflows/knowledgeIngestion.ts):
 * start (pending → processing), extract (fetch through the guarded HTTP helper or read the upload, then
 * extract text), index (chunk + replace chunks + ready, one transaction) and fail (failed + reason).
 * Each status transition emits the webhook event `knowledge.source.updated` in its own transaction.
 *
 * Every activity is idempotent: a retry re-enters the same state. Failures that another attempt cannot
 * fix (4xx answers, SSRF refusals, a host name DNS says does not exist, unsupported or empty content, an
 * expired upload) are thrown as non-retryable ApplicationFailures whose `type` is the stable failure
 * code stored on the source; transient ones (timeouts, 5xx, connection errors) are retryable, within
 * the workflow's bounded RETRY.fetch policy.
 */
import type { Knex } from 'knex';
import { ApplicationFailure } from '@temporalio/common';
import { chunkText, type ChunkOptions } from '../domain/knowledge/chunk';
import { extractDocument, normalizeText, UnsupportedContentError, type ExtractedDocument } from '../domain/knowledge/extract';
import { getExtraction, getSource, indexChunks, markFailed, markProcessing, saveExtraction, type OnSourceChange, type SourceInput } from '../db/repositories/knowledge';
import { getUploadContent } from '../db/repositories/uploads';
import { emitEvent } from '../events/emit';
import { createHttpClient, HttpFetchError, type HttpClient } from '../providers/http';
import type { ActivityDeps } from './index';
import { EmbeddingsError, type EmbeddingsProvider } from '../providers/embeddings';
import { configuredEmbeddings } from '../services/knowledge/retrieval';
import { ensureVectorIndex } from '../db/repositories/knowledgeEmbeddings';
import { sourceTextSearchConfig } from '../domain/knowledge/language';
import { saveSourceValidators } from '../db/repositories/knowledgeRefresh';
import { contentHash } from '../domain/knowledge/crawl';

/** Input of every knowledge activity. */
export interface KnowledgeSourceRef {
  orgId: string;
  sourceId: string;
}

/** Options for tests and benchmarks. */
export interface KnowledgeActivityOptions {
  /** HTTP client (default: guarded client configured from the environment). */
  http?: HttpClient;
  chunking?: ChunkOptions;
  /** Embeddings of the chunks (default: the configured provider, EMBEDDINGS_PROVIDER; docs/knowledge.md "Retrieval"). */
  embeddings?: EmbeddingsProvider;
  /** Longest wait, ms, for a text source's embeddings within its start activity (default {@link INLINE_INDEX_MS}). */
  inlineIndexMs?: number;
}

const ACCEPT = 'text/html, application/xhtml+xml, application/pdf, text/markdown, text/plain;q=0.9, */*;q=0.1';

function nonRetryable(code: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: code, message, nonRetryable: true });
}

/** HttpFetchError → ApplicationFailure (retryable per the error's own verdict). */
function fromFetchError(err: HttpFetchError): ApplicationFailure {
  return ApplicationFailure.create({ type: err.code, message: err.message, nonRetryable: !err.retryable });
}

/** Name of the document for format detection: the URL's last path segment. */
function urlFilename(url: string): string | null {
  try {
    return decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '') || null;
  } catch {
    return null;
  }
}

/**
 * Builds the knowledge activities.
 * @param deps database and logger of the worker
 */
export function createKnowledgeActivities(deps: ActivityDeps, opts: KnowledgeActivityOptions = {}) {
  const { db } = deps;
  let http = opts.http;
  const client = (): HttpClient => (http ??= createHttpClient());
  // Every status transition emits `knowledge.source.updated` in the transaction that makes it.
  const notify = (orgId: string): OnSourceChange => (trx, change) => emitEvent(trx, orgId, 'knowledge.source.updated', change);

  async function fetchDocument(orgId: string, source: NonNullable<Awaited<ReturnType<typeof markProcessing>>>): Promise<ExtractedDocument & { contentType: string | null }> {
    if (source.kind === 'text') {
      return { format: 'text', text: normalizeText(source.text ?? ''), title: null, contentType: 'text/plain' };
    }
    let bytes: Buffer;
    let contentType: string | null;
    let filename: string | null;
    if (source.kind === 'url') {
      try {
        const res = await client().get(source.url!, { accept: ACCEPT });
        bytes = res.body;
        contentType = res.contentTypeHeader;
        filename = urlFilename(res.url);
        // The validators and hash let the first refresh answer 304 / unchanged (docs/knowledge.md "Refresh and crawl").
        await saveSourceValidators(db, orgId, source.id, { etag: res.etag ?? null, lastModified: res.lastModified ?? null, contentHash: contentHash(bytes) });
      } catch (err) {
        if (err instanceof HttpFetchError) throw fromFetchError(err);
        throw err;
      }
    } else {
      const file = source.fileId ? await getUploadContent(db, orgId, source.fileId) : undefined;
      if (!file) throw nonRetryable('file_expired', `The uploaded file ${source.fileId ?? ''} no longer exists`);
      bytes = file.data;
      contentType = file.contentType;
      filename = file.filename;
    }
    try {
      const doc = await extractDocument({ bytes, contentType, filename });
      return { ...doc, contentType: contentType ? contentType.split(';')[0].trim().toLowerCase() : null };
    } catch (err) {
      if (err instanceof UnsupportedContentError) throw nonRetryable('unsupported_content', err.message);
      throw err;
    }
  }

  // Composed when the worker starts, so a misconfigured EMBEDDINGS_PROVIDER stops it with one line.
  const provider = opts.embeddings ?? configuredEmbeddings();

  const embedChunks = (ref: KnowledgeSourceRef, texts: string[], signal?: AbortSignal) =>
    embedForIndex({ db, logger: deps.logger, provider }, texts, { sourceId: ref.sourceId }, 'embedding the chunks failed; the source is indexed for full-text search only', signal);

  /**
   * Chunks the extracted text, replaces the source's chunks and marks it ready (one transaction); a source already
   * ready answers its chunk count again.
   * @param signal bounds the embeddings request (aborting it throws)
   * @param stored the extraction just stored, with its agent's language (read back from the source without it)
   */
  async function indexSource(ref: KnowledgeSourceRef, signal?: AbortSignal, stored?: { text: string; agentLanguage: string | undefined }): Promise<{ chunkCount: number }> {
    const extraction = stored ?? (await getExtraction(db, ref.orgId, ref.sourceId));
    if (!extraction) {
      const current = await getSource(db, ref.orgId, ref.sourceId);
      if (current?.status === 'ready') return { chunkCount: current.chunkCount };
      throw nonRetryable('source_not_processing', `Knowledge source ${ref.sourceId} has no extracted text to index`);
    }
    const chunks = chunkText(extraction.text, opts.chunking);
    // The source's language decides its stemmer and stop words (docs/knowledge.md "Languages").
    const textSearchConfig = sourceTextSearchConfig(extraction.text, extraction.agentLanguage);
    const embeddings = await embedChunks(ref, chunks.map((c) => c.content), signal);
    const n = await indexChunks(db, ref.orgId, ref.sourceId, chunks, notify(ref.orgId), { textSearchConfig, embeddings });
    if (n === undefined) {
      const current = await getSource(db, ref.orgId, ref.sourceId);
      if (current?.status === 'ready') return { chunkCount: current.chunkCount };
      throw nonRetryable('source_not_processing', `Knowledge source ${ref.sourceId} is ${current?.status ?? 'gone'}`);
    }
    return { chunkCount: n };
  }

  return {
    /**
     * pending → processing; a text source's text is stored as its extraction too (`extracted`), and indexed here too
     * (`indexed`, with `chunkCount`) when its embeddings take at most `inlineIndexMs`: otherwise, or when it fails, the
     * workflow's own index activity does it with its own timeout and retries, as for every other kind.
     * @returns the status when the source was read (`ready`/`failed` when it had already finished)
     * @throws retryable ApplicationFailure `source_not_found` while the source does not exist: the API
     *   commits the source just after starting the workflow, so the workflow retries a few times
     */
    async startKnowledgeIngestion(ref: KnowledgeSourceRef): Promise<{ status: string; kind: string; crawl?: boolean; extracted?: boolean; indexed?: boolean; chunkCount?: number }> {
      // A text source has nothing to fetch: its text is stored as its extraction in the transaction that moves it to
      // processing, so the workflow schedules no extraction activity for it.
      let empty = false;
      let stored: { text: string; agentLanguage: string | undefined } | undefined;
      const storeText = async (trx: Knex.Transaction, s: SourceInput) => {
        if (s.status !== 'processing' || s.kind !== 'text') return;
        const text = normalizeText(s.text ?? '');
        if (!text.trim()) return void (empty = true);
        const saved = await saveExtraction(trx, ref.orgId, ref.sourceId, { format: 'text', title: null, contentType: 'text/plain', text });
        stored = saved && { text, agentLanguage: saved.agentLanguage };
      };
      let source = await markProcessing(db, ref.orgId, ref.sourceId, notify(ref.orgId), storeText);
      // The API's transaction commits a moment after the start reaches Temporal: wait briefly for it
      // here rather than paying a whole retry interval.
      for (let i = 0; !source && i < 20; i++) {
        await new Promise((r) => setTimeout(r, 50));
        source = await markProcessing(db, ref.orgId, ref.sourceId, notify(ref.orgId), storeText);
      }
      if (!source) throw ApplicationFailure.create({ type: 'source_not_found', message: `Knowledge source ${ref.sourceId} does not exist (yet)` });
      // The source stays processing, as before: the workflow records the failure (failKnowledgeSource).
      if (empty) throw nonRetryable('empty_content', 'The document contains no text');
      if (stored) {
        // Indexed here too: one activity and one workflow task fewer per text source, what a flood of pages costs the
        // Temporal service and the worker in gRPC calls (docs/operations.md "Fair sharing").
        const indexed = await indexSource(ref, AbortSignal.timeout(opts.inlineIndexMs ?? INLINE_INDEX_MS), stored).catch((err) => {
          deps.logger.debug({ err, sourceId: ref.sourceId }, 'indexing with the start did not finish; the index activity will');
          return undefined;
        });
        return { status: source.status, kind: source.kind, extracted: true, ...(indexed ? { indexed: true, chunkCount: indexed.chunkCount } : {}) };
      }
      // A crawling URL source is ingested by the crawl (activities/knowledgeRefresh.ts).
      return { status: source.status, kind: source.kind, crawl: source.kind === 'url' && !!source.crawl };
    },

    /**
     * Fetches (URL through the SSRF-guarded helper, file from the upload, text as given), extracts the
     * text and stores it on the source. The workflow calls it for a source the start left processing and not extracted.
     * @returns format, title and character count
     */
    async extractKnowledgeSource(ref: KnowledgeSourceRef): Promise<{ format: string; title: string | null; charCount: number }> {
      const source = await markProcessing(db, ref.orgId, ref.sourceId);
      if (!source) throw nonRetryable('source_not_found', `Knowledge source ${ref.sourceId} does not exist`);
      if (source.status !== 'processing') throw nonRetryable('source_not_processing', `Knowledge source ${ref.sourceId} is ${source.status}`);
      const doc = await fetchDocument(ref.orgId, source);
      if (!doc.text.trim()) throw nonRetryable('empty_content', 'The document contains no text');
      await saveExtraction(db, ref.orgId, ref.sourceId, { format: doc.format, title: doc.title, contentType: doc.contentType, text: doc.text });
      return { format: doc.format, title: doc.title, charCount: doc.text.length };
    },

    /**
     * Chunks the extracted text, replaces the source's chunks and marks it ready (one transaction).
     * A source already ready answers its chunk count again (replay after a lost completion).
     */
    async indexKnowledgeSource(ref: KnowledgeSourceRef): Promise<{ chunkCount: number }> {
      return indexSource(ref);
    },

    /** Marks the source failed with a code and reason (no-op when it is gone or already ready). */
    async failKnowledgeSource(ref: KnowledgeSourceRef & { code: string; reason: string }): Promise<void> {
      await markFailed(db, ref.orgId, ref.sourceId, ref.code, ref.reason, notify(ref.orgId));
    },
  };
}

/**
 * Longest wait, ms, for the embeddings of a text source indexed within its start activity (whose start-to-close
 * timeout is 30 s, workflows/knowledgeIngestion.ts); a slower provider leaves it to the index activity.
 */
export const INLINE_INDEX_MS = 10_000;

/** The activity functions' types, for `proxyActivities` in the workflow. */
export type KnowledgeActivities = ReturnType<typeof createKnowledgeActivities>;

/**
 * Vectors of chunks about to be indexed, with the configured embeddings model (undefined from a lexical-only provider
 * or for no text). A transient provider failure is thrown as `embeddings_unavailable` for Temporal to retry; one a
 * retry cannot fix (a refused key, a rejected request) is logged with `warning` and leaves the chunks searchable by
 * full-text alone — the re-embedding backfills them (services/knowledge/reembed.ts). Shared by ingestion and refresh.
 * @returns the model id and one unit vector per text
 */
export async function embedForIndex(
  deps: Pick<ActivityDeps, 'db' | 'logger'> & { provider: EmbeddingsProvider },
  texts: string[],
  logFields: Record<string, unknown>,
  warning: string,
  signal?: AbortSignal,
): Promise<{ model: string; vectors: number[][] } | undefined> {
  const { provider } = deps;
  if (!provider.model || !texts.length) return undefined;
  try {
    const vectors = await provider.embed(texts, signal ? { signal } : undefined);
    signal?.throwIfAborted();
    if (vectors[0]) await ensureVectorIndex(deps.db, vectors[0].length);
    return { model: provider.model, vectors };
  } catch (err) {
    // The caller's bound ran out: it is the caller's to fall back, not a provider's verdict on the texts.
    if (signal?.aborted) throw signal.reason;
    if (err instanceof EmbeddingsError && !err.retryable) {
      deps.logger.warn({ err, ...logFields }, warning);
      return undefined;
    }
    throw ApplicationFailure.create({ type: 'embeddings_unavailable', message: err instanceof Error ? err.message : String(err) });
  }
}
