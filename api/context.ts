/** Request-scoped state (Koa `ctx.state`) and the dependencies handed to every handler. */
import type { ParameterizedContext } from 'koa';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { AppConfig } from '../config';
import type { Db } from '../db';
import type { ReadCache } from '../db/changeFeed';
import type { KnowledgeIndexes } from '../services/knowledge/lexicalIndex';
import type { RegistrationRecord } from '../db/repositories/smsRegistrations';
import type { NumberOwner } from '../db/repositories/numbers';
import type { RouteDef } from './routes/table';
import type { IdempotencyClaim } from './middleware/idempotency';
import type { Scope } from '../domain/scopes';
import type { LlmProvider } from '../domain/conversations/llm';
import type { SkillHttpClient } from '../providers/http/request';
import type { Mailer } from '../providers/mailer';
import type { EmbeddingsProvider } from '../providers/embeddings';

/** The authenticated caller: the credential alone decides the organization (spec "Authentication"). */
export interface AuthContext {
  orgId: string;
  keyId: string;
  kind: 'secret' | 'publishable' | 'oauth' | 'session';
  scopes: ReadonlySet<Scope | string>;
  rateLimitPoints: number | null;
  rateLimitWindowSeconds: number | null;
  /** When the key stops authenticating (null: never); a rotated key's grace period ends here. */
  expiresAt: Date | null;
  /**
   * The OAuth grant (one member's approval of an app) behind this credential: an access token's own, or
   * the one whose token minted this key, directly or through keys it minted; absent for keys an owner
   * minted. Credentials it mints inherit it, and it decides the caller's Team role (api/routes/team.ts).
   */
  grantId?: string;
  /**
   * Publishable keys only (spec "Authentication" 3): the agent the key is pinned to and the browser
   * origins it serves, normalized (domain/keys.ts; check a request's `Origin` with `originAllowed`).
   */
  publishable?: { agentId: string; allowedOrigins: readonly string[] };
  /**
   * Widget session tokens only (docs/api-notes.md "Widget"): the one conversation the token continues and the page
   * origin it was issued to; `keyId` is the publishable key that started it.
   */
  session?: { conversationId: string; origin: string };
}

/** What middleware puts on `ctx.state`. */
export interface AppState {
  requestId: string;
  log: Logger;
  route?: RouteDef;
  auth?: AuthContext;
  /** The claimed Idempotency-Key, on routes that take one (api/middleware/idempotency.ts). */
  idempotency?: IdempotencyClaim;
  /**
   * The status of the audit entry the handler's own statement stored with its change
   * (api/middleware/audit.ts pendingAuditEntry); the audit middleware then writes none for that status.
   */
  auditStored?: number;
}

/** Services shared by the whole app. */
export interface AppDeps {
  db: Db;
  config: AppConfig;
  logger: Logger;
  /** In-process read caches evicted by the Postgres change feed (db/changeFeed.ts). */
  caches: {
    smsRegistrations: ReadCache<RegistrationRecord>;
    /** Knowledge indexes of conversation turns, by version's sources (docs/knowledge.md "Retrieval"). */
    knowledge: KnowledgeIndexes;
    /** A purchased number's organization and number (its agent, its SMS toggle), by E.164 (inbound texts). */
    numberOwners: ReadCache<NumberOwner>;
  };
  /** Temporal client (starts and signals workflows); absent when the API runs without Temporal. */
  temporal?: { client: Client; taskQueue: string };
  /** Providers of the conversation runtime (docs/api-notes.md "Conversations"): the chat model and the skills' HTTP client. */
  providers: AppProviders;
  /**
   * Whether the credential of a request still being answered (an open event stream) still authenticates
   * (api/middleware/auth.ts `credentialCheck`; docs/security.md "Revocation"). Absent: not checked.
   */
  credentialStillValid?: (ctx: AppContext) => Promise<boolean>;
  /** Base URL of the Temporal Web UI served beside the embedded dev server (docs/operations.md "Inspecting workflows"); absent when none runs. */
  temporalUiUrl?: string;
}

/** Outside providers the API calls directly; each defaults to the one configured by environment. */
export interface AppProviders {
  llm: LlmProvider;
  skillHttp: SkillHttpClient;
  /** Sends team invitations (docs/team-and-oauth.md "Team"). */
  mailer: Mailer;
  /** Embeddings of knowledge retrieval (docs/knowledge.md "Retrieval"; EMBEDDINGS_PROVIDER). */
  embeddings?: EmbeddingsProvider;
}

/** Koa context of this API. */
export type AppContext = ParameterizedContext<AppState>;

/**
 * A route handler: returns the envelope's `data` (and optionally a message or status), or throws ApiError.
 * The framework wraps the result in the success envelope.
 */
export type Handler = (
  ctx: AppContext,
  deps: AppDeps,
) => Promise<{
  data?: unknown;
  message?: string;
  status?: number;
  headers?: Record<string, string>;
  /** A complete success envelope already serialized, as text or UTF-8 bytes (hot read paths cache it); used instead of `data`. */
  rawJson?: string | Buffer;
  /** A streamed body (Server-Sent Events) with its content type; used instead of `data`. */
  stream?: { body: NodeJS.ReadableStream; contentType: string };
}>;
