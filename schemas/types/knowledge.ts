/**
 * Knowledge and upload request/response types (spec "Other endpoints": Knowledge, Uploads; "Errors":
 * file_expired, file_too_large). Payloads are "not shown" in the spec; these shapes are our decision
 * (docs/api-notes.md).
 */

/** Kind of knowledge source: a web page fetched by URL, an uploaded file, or text given inline. */
export type KnowledgeSourceKind = 'url' | 'file' | 'text';

/** Ingestion status: pending → processing → ready | failed. */
export type KnowledgeSourceStatus = 'pending' | 'processing' | 'ready' | 'failed';

/**
 * Request body of `POST /agents/{agentId}/knowledge/sources` (createKnowledgeSource). Exactly the field
 * of the chosen kind is required: `url` for `url`, `fileId` for `file`, `text` for `text`.
 * @additionalProperties false
 */
export interface KnowledgeSourceCreate {
  kind: KnowledgeSourceKind;
  /** Display name; defaults to the page title, the file name or the first words of the text. @maxLength 200 */
  name?: string;
  /** http(s) URL of the page or document (kind `url`). @maxLength 2048 */
  url?: string;
  /** Id of an upload (`file_…`, from POST /uploads) (kind `file`). @maxLength 64 */
  fileId?: string;
  /** The text itself (kind `text`). @minLength 1 @maxLength 1000000 */
  text?: string;
  /** Re-fetch the URL on a schedule (kind `url`; docs/knowledge.md "Refresh and crawl"). */
  refresh?: KnowledgeRefresh;
  /** Crawl the site from the URL (kind `url`): pages from sitemap.xml and links, robots.txt honoured. */
  crawl?: KnowledgeCrawl;
}

/**
 * How often a URL source is checked for changes (a Temporal schedule `knowledge-refresh/{sourceId}`).
 * @additionalProperties false
 */
export interface KnowledgeRefresh {
  /** Hours between checks. @minimum 1 @maximum 8760 @asType integer */
  everyHours: number;
}

/**
 * Crawl settings of a URL source: the pages found from its sitemap.xml and links, same origin only, robots.txt
 * honoured (RFC 9309), each indexed as a page of the source.
 * @additionalProperties false
 */
export interface KnowledgeCrawl {
  /** Pages fetched per crawl, the start URL included. @minimum 1 @maximum 500 @asType integer */
  maxPages: number;
  /** Only pages of the start URL's origin are crawled (the only mode offered). */
  sameOrigin?: true;
  /** Path prefixes a page must start with (`*` matches any characters); all paths when omitted. @maxItems 50 */
  includePaths?: string[];
  /** Path prefixes never crawled (`*` matches any characters). @maxItems 50 */
  excludePaths?: string[];
}

/** The last check of a URL source for changes (a refresh). */
export interface KnowledgeSourceCheck {
  /** ISO 8601. @format date-time */
  checkedAt: string;
  /** `unchanged` (304, or the same bytes), `updated` (re-indexed) or `failed` (the indexed chunks were kept). */
  outcome: 'unchanged' | 'updated' | 'failed';
  /** HTTP status of the (start) page, or null when no answer came. */
  statusCode: number | null;
  /** Why the check failed (outcome `failed`), e.g. `network`, `http_status`, `too_large`, `unsupported_content`. */
  failureCode: string | null;
  failureReason: string | null;
  /** Crawling sources: pages by outcome of this check. */
  pages: { checked: number; updated: number; unchanged: number; failed: number } | null;
}

/**
 * Request body of `PATCH /agents/{agentId}/knowledge/sources/{id}` (updateKnowledgeSource): sets or removes the
 * refresh schedule of a URL source.
 * @additionalProperties false
 */
export interface KnowledgeSourceUpdate {
  /** The new interval, or null to stop refreshing. */
  refresh: KnowledgeRefresh | null;
}

/** One page of a crawling source, with its own status. */
export interface KnowledgeCrawlPage {
  /** `kpg_…` */
  id: string;
  sourceId: string;
  url: string;
  /** `ready` (its chunks are indexed) or `failed` (see failureCode; chunks of an earlier version are kept). */
  status: 'ready' | 'failed';
  failureCode: string | null;
  failureReason: string | null;
  /** HTTP status of the last fetch, or null when no answer came. */
  httpStatus: number | null;
  format: string | null;
  title: string | null;
  chunkCount: number;
  /** Outcome of the last check of this page. */
  lastOutcome: 'unchanged' | 'updated' | 'failed' | null;
  /** ISO 8601. @format date-time */
  checkedAt: string | null;
}

/** One page of a crawling source's pages (oldest first). */
export interface KnowledgeCrawlPageList {
  items: KnowledgeCrawlPage[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** A knowledge source of an agent. */
export interface KnowledgeSource {
  /** `ks_…` */
  id: string;
  agentId: string;
  kind: KnowledgeSourceKind;
  name: string | null;
  /** Kind `url`: the URL as submitted. */
  url: string | null;
  /** Kind `file`: the upload it was made from. */
  fileId: string | null;
  status: KnowledgeSourceStatus;
  /** Why ingestion failed (status `failed`), e.g. `ssrf_refused`, `http_status`, `unsupported_content`. */
  failureCode: string | null;
  /** Human-readable reason of the failure. */
  failureReason: string | null;
  /** Detected format once extracted: html, pdf, markdown or text. */
  format: string | null;
  /** Title found in the document (HTML title, PDF metadata, first Markdown heading). */
  title: string | null;
  /** Characters of extracted text. */
  charCount: number | null;
  /** Chunks indexed (0 until ready). */
  chunkCount: number;
  /** ISO 8601. @format date-time */
  createdAt: string;
  /** ISO 8601. @format date-time */
  updatedAt: string;
  /** When ingestion finished successfully. ISO 8601. @format date-time */
  readyAt: string | null;
  /** Kind `url`: the refresh schedule, or null when the source is not refreshed. */
  refresh?: KnowledgeRefresh | null;
  /** Kind `url`: the crawl settings, or null for a single document. */
  crawl?: KnowledgeCrawl | null;
  /** Kind `url`: the last check for changes, or null before the first. */
  lastCheck?: KnowledgeSourceCheck | null;
}

/** One page of knowledge sources (oldest first). */
export interface KnowledgeSourcePage {
  items: KnowledgeSource[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Request body of `POST /agents/{agentId}/knowledge/preview` (previewKnowledge).
 * @additionalProperties false
 */
export interface KnowledgePreviewRequest {
  /** A caller's question or keywords. @minLength 1 @maxLength 1000 */
  query: string;
  /** Chunks to return (default 5). @minimum 1 @maximum 50 @asType integer */
  limit?: number;
}

/** One retrieved chunk with its score and source. */
export interface KnowledgePreviewHit {
  /** `chk_…` */
  chunkId: string;
  /** Position of the chunk within its source, from 0. */
  ordinal: number;
  content: string;
  /** Relevance, 0..1, higher is better: with full-text search alone, Postgres ts_rank normalized as rank/(rank+1); with hybrid retrieval (embeddings configured, or several conversation turns), the reciprocal-rank-fusion score divided by its maximum (docs/knowledge.md). */
  score: number;
  source: {
    id: string;
    kind: KnowledgeSourceKind;
    name: string | null;
    title: string | null;
    url: string | null;
  };
}

/** Response data of previewKnowledge: best chunks first. */
export interface KnowledgePreview {
  query: string;
  results: KnowledgePreviewHit[];
}

/** Response data of `POST /uploads` (createUpload). */
export interface Upload {
  /** `file_…`: pass as `fileId` when adding a knowledge source, importing contacts or records, or attaching media to a text. */
  id: string;
  filename: string;
  contentType: string;
  sizeBytes: number;
  /** Hex SHA-256 of the bytes. */
  sha256: string;
  /** ISO 8601. @format date-time */
  createdAt: string;
  /** The file is collected after this instant unless a knowledge source has taken it (then `file_expired`). ISO 8601. @format date-time */
  expiresAt: string;
}
