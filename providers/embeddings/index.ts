/**
 * The embeddings interface (DESIGN.md "Providers"; docs/knowledge.md "Retrieval"): text → vectors for semantic
 * retrieval. Adapters side by side: `sandbox` (the default; lexical only — it produces no vectors, so retrieval is
 * Postgres full-text search alone) and `openai` (any OpenAI-compatible `POST /embeddings`, on the official `openai`
 * SDK; OpenAI API reference "Embeddings").
 *
 * A vector's model id (`EmbeddingsProvider.model`) names its vector space: the model, plus `@<dimensions>` when
 * EMBEDDINGS_DIMENSIONS shortens it. Vectors of different ids are never compared; each stored vector keeps its id.
 */
import { envNumber } from '../../config';
import { instrumentProvider } from '../../metrics';
import { OpenAiEmbeddings } from './openai';
import { SandboxEmbeddings } from './sandbox';

/** Why an embeddings call failed; `retryable` for the transient kinds (429, 5xx, no connection, timeout). */
export type EmbeddingsErrorKind = 'rate_limited' | 'unavailable' | 'timeout' | 'bad_request' | 'auth' | 'no_vectors';

/** A failed embeddings call (or a provider that produces no vectors: `no_vectors`). */
export class EmbeddingsError extends Error {
  override readonly name = 'EmbeddingsError';
  /**
   * @param kind what failed (HTTP mapping: 429 rate_limited, 401/403 auth, 408/no answer timeout, 5xx/no connection unavailable, other 4xx bad_request)
   * @param message a sentence for logs (never a key)
   */
  constructor(
    readonly kind: EmbeddingsErrorKind,
    message: string,
    opts: { cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
  }

  /** Whether another attempt may succeed. */
  get retryable(): boolean {
    return this.kind === 'rate_limited' || this.kind === 'unavailable' || this.kind === 'timeout';
  }
}

/** Turns texts into vectors. */
export interface EmbeddingsProvider {
  /** Adapter name (`sandbox`, `openai`). */
  readonly name: string;
  /** Model id of the vectors this provider writes (module docstring); null when it produces none (lexical only). */
  readonly model: string | null;
  /**
   * Embeds texts, in order: one unit-length vector per text.
   * @param opts.model a model id to embed with instead of `model` (a query against vectors of an older model while
   *   the organization's chunks are re-embedded)
   * @throws EmbeddingsError (`no_vectors` from a provider whose `model` is null)
   */
  embed(texts: readonly string[], opts?: { model?: string; signal?: AbortSignal }): Promise<number[][]>;
}

/** Default of EMBEDDINGS_MODEL. */
export const DEFAULT_EMBEDDINGS_MODEL = 'text-embedding-3-small';
/** Default of EMBEDDINGS_BASE_URL. */
export const DEFAULT_EMBEDDINGS_BASE_URL = 'https://api.openai.com/v1';
/** Bound of one embeddings request, ms. */
export const EMBEDDINGS_TIMEOUT_MS = 15_000;

/** The model id of `model` shortened to `dimensions` (module docstring). */
export function embeddingsModelId(model: string, dimensions?: number | null): string {
  return dimensions ? `${model}@${dimensions}` : model;
}

/** Model name and dimensions of a model id (inverse of {@link embeddingsModelId}). */
export function parseEmbeddingsModelId(id: string): { model: string; dimensions: number | null } {
  const m = /^(.*)@(\d+)$/.exec(id);
  return m ? { model: m[1], dimensions: Number(m[2]) } : { model: id, dimensions: null };
}

/**
 * The configured embeddings provider (docs/configuration.md "Knowledge retrieval"): EMBEDDINGS_PROVIDER `sandbox`
 * (default, no vectors) or `openai` (EMBEDDINGS_BASE_URL, EMBEDDINGS_API_KEY — required, any non-empty value for a
 * server that takes none —, EMBEDDINGS_MODEL, EMBEDDINGS_DIMENSIONS).
 * @throws Error for an unknown provider, a missing key with `openai`, or a malformed number
 */
export function createEmbeddings(env: NodeJS.ProcessEnv = process.env): EmbeddingsProvider {
  const provider = env.EMBEDDINGS_PROVIDER || 'sandbox';
  if (provider === 'sandbox') return new SandboxEmbeddings();
  if (provider === 'openai') {
    const apiKey = env.EMBEDDINGS_API_KEY;
    if (!apiKey) throw new Error('EMBEDDINGS_API_KEY is required when EMBEDDINGS_PROVIDER=openai (any non-empty value for a server that takes no key)');
    const dimensions = envNumber('EMBEDDINGS_DIMENSIONS', 0, env);
    if (!Number.isInteger(dimensions)) throw new Error(`EMBEDDINGS_DIMENSIONS must be a whole number, got "${env.EMBEDDINGS_DIMENSIONS}"`);
    return instrumentProvider(
      'embeddings',
      provider,
      new OpenAiEmbeddings({
        baseUrl: env.EMBEDDINGS_BASE_URL || DEFAULT_EMBEDDINGS_BASE_URL,
        apiKey,
        model: env.EMBEDDINGS_MODEL || DEFAULT_EMBEDDINGS_MODEL,
        dimensions: dimensions || null,
      }),
    );
  }
  throw new Error(`EMBEDDINGS_PROVIDER=${provider} is not supported; use "sandbox" or "openai"`);
}
