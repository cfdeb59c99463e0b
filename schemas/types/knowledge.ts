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
  /** Full-text relevance (Postgres ts_rank, normalized to 0..1 as rank/(rank+1)); higher is better. */
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
  /** `file_…`: pass as `fileId` when adding a knowledge source. */
  fileId: string;
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
