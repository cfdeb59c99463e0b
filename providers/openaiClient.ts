/**
 * The official `openai` client as every OpenAI-compatible provider of this service builds it: every option explicit,
 * so the SDK reads none of its own OPENAI_* variables (the service's configuration is docs/configuration.md).
 */
import type OpenAI from 'openai';
import { lazyModule } from './lazyModule';

/** The `openai` SDK, loaded when a provider first needs it (./lazyModule.ts): the sandbox LLM and embeddings never do. */
export const openAiSdk = lazyModule(() => require('openai') as typeof import('openai'), 'openai');

/** What the providers set. */
export interface OpenAiClientOptions {
  apiKey: string;
  /** Base URL of the OpenAI-compatible API (`…/v1`). */
  baseUrl: string;
  /** Per request, ms. */
  timeoutMs: number;
  maxRetries: number;
  /** The fetch the client calls (default: the global one). */
  fetch?: typeof fetch;
}

/** A client with only the given options (OpenAI Node SDK `ClientOptions`). */
export function createOpenAiClient(opts: OpenAiClientOptions): OpenAI {
  return new (openAiSdk().default)({
    apiKey: opts.apiKey,
    baseURL: opts.baseUrl,
    organization: null,
    project: null,
    adminAPIKey: null,
    webhookSecret: null,
    timeout: opts.timeoutMs,
    maxRetries: opts.maxRetries,
    logLevel: 'warn',
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
}
