/**
 * The OpenAI-compatible embeddings adapter, on the official `openai` SDK: `POST {EMBEDDINGS_BASE_URL}/embeddings`
 * with `{model, input: string[], dimensions?, encoding_format: 'float'}` and `Authorization: Bearer
 * {EMBEDDINGS_API_KEY}` (OpenAI API reference "Embeddings"; also served by vLLM, Ollama, LM Studio, LiteLLM…).
 * `dimensions` is sent only when EMBEDDINGS_DIMENSIONS is set (text-embedding-3 models shorten their vectors).
 * Inputs go in batches of BATCH_SIZE; answers are put back in input order by their `index`, and scaled to unit length.
 * Errors: 429 → rate_limited, 401/403 → auth, 408 or no answer within EMBEDDINGS_TIMEOUT_MS → timeout, 5xx or no
 * connection → unavailable, any other 4xx → bad_request (EmbeddingsError).
 */
import type OpenAI from 'openai';
import { createOpenAiClient, openAiSdk } from '../openaiClient';
import { normalize } from '../../domain/knowledge/fusion';
import { EMBEDDINGS_TIMEOUT_MS, EmbeddingsError, embeddingsModelId, parseEmbeddingsModelId, type EmbeddingsProvider } from './index';

/** Inputs per request (OpenAI accepts up to 2,048; smaller batches keep one request's latency and size modest). */
export const BATCH_SIZE = 96;
/** Characters of one input sent at most (about 8,000 tokens, the model's input limit, at ≥ 3 characters a token). */
export const MAX_INPUT_CHARS = 24_000;

/** Options of the adapter (docs/configuration.md "Knowledge retrieval"). */
export interface OpenAiEmbeddingsOptions {
  baseUrl: string;
  apiKey: string;
  model: string;
  /** EMBEDDINGS_DIMENSIONS; null: the model's own. */
  dimensions?: number | null;
  timeoutMs?: number;
}

/** The OpenAI-compatible adapter (module docstring). */
export class OpenAiEmbeddings implements EmbeddingsProvider {
  readonly name = 'openai';
  readonly model: string;
  private readonly client: OpenAI;

  /** @param opts base URL, key, model and optional dimensions */
  constructor(opts: OpenAiEmbeddingsOptions) {
    this.model = embeddingsModelId(opts.model, opts.dimensions);
    this.client = createOpenAiClient({ apiKey: opts.apiKey, baseUrl: opts.baseUrl, timeoutMs: opts.timeoutMs ?? EMBEDDINGS_TIMEOUT_MS, maxRetries: 1 });
  }

  /** Unit vectors of `texts`, in order (module docstring). @throws EmbeddingsError */
  async embed(texts: readonly string[], opts: { model?: string; signal?: AbortSignal } = {}): Promise<number[][]> {
    const { model, dimensions } = parseEmbeddingsModelId(opts.model ?? this.model);
    const out: number[][] = [];
    for (let i = 0; i < texts.length; i += BATCH_SIZE) {
      const batch = texts.slice(i, i + BATCH_SIZE).map((t) => t.slice(0, MAX_INPUT_CHARS) || ' ');
      let res;
      try {
        res = await this.client.embeddings.create(
          { model, input: batch, encoding_format: 'float', ...(dimensions ? { dimensions } : {}) },
          { signal: opts.signal },
        );
      } catch (err) {
        throw toEmbeddingsError(err);
      }
      const vectors = new Array<number[]>(batch.length);
      for (const d of res.data) if (d.index >= 0 && d.index < batch.length) vectors[d.index] = normalize(d.embedding as number[]);
      for (let j = 0; j < batch.length; j++) {
        if (!vectors[j]) throw new EmbeddingsError('bad_request', `the embeddings answer has no vector for input ${i + j}`);
        if (dimensions && vectors[j].length !== dimensions) throw new EmbeddingsError('bad_request', `the embeddings answer has ${vectors[j].length} dimensions, ${dimensions} were asked for`);
      }
      out.push(...vectors);
    }
    return out;
  }
}

/** SDK error → EmbeddingsError (module docstring). */
function toEmbeddingsError(err: unknown): unknown {
  if (err instanceof EmbeddingsError) return err;
  const sdk = openAiSdk.loaded();
  if (sdk && err instanceof sdk.APIConnectionTimeoutError) return new EmbeddingsError('timeout', 'the embeddings server did not answer in time', { cause: err });
  if (sdk && err instanceof sdk.APIConnectionError) return new EmbeddingsError('unavailable', `cannot reach the embeddings server: ${err.message}`, { cause: err });
  if (sdk && err instanceof sdk.APIError && typeof err.status === 'number') {
    const s = err.status;
    const message = `the embeddings server answered ${s}: ${err.message}`;
    if (s === 429) return new EmbeddingsError('rate_limited', message, { cause: err });
    if (s === 401 || s === 403) return new EmbeddingsError('auth', message, { cause: err });
    if (s === 408) return new EmbeddingsError('timeout', message, { cause: err });
    if (s >= 500) return new EmbeddingsError('unavailable', message, { cause: err });
    return new EmbeddingsError('bad_request', message, { cause: err });
  }
  return err;
}
