/**
 * Secret and publishable key wire types (spec "Authentication" 1 and 3; paths and fields "not shown",
 * decided in docs/api-notes.md "Credentials and tenancy"). A key's secret is shown once, in the
 * answer that creates it (creation or rotation); only its SHA-256 hash is stored.
 */

/**
 * Request body of `POST /api-keys` (createApiKey).
 * @additionalProperties false
 */
export interface ApiKeyCreate {
  /**
   * A label for people, e.g. "billing sync".
   * @minLength 1
   * @maxLength 100
   */
  name: string;
  /**
   * Scopes of the new key: each must be held by the calling key (403 `insufficient_scope` otherwise) and
   * none may be reserved.
   * @minItems 1
   * @maxItems 60
   * @uniqueItems true
   */
  scopes: ApiKeyScope[];
  /**
   * When the key stops authenticating (401 afterwards); must be in the future. Omitted: never.
   * @format date-time
   */
  expiresAt?: string | null;
}

/**
 * A scope name of the spec's catalogue, e.g. `agents:read`.
 * @pattern ^[a-z_]+:[a-z_]+$
 * @maxLength 64
 */
export type ApiKeyScope = string;

/**
 * Request body of `POST /api-keys/{id}/rotate` (rotateApiKey); the body is optional.
 * @additionalProperties false
 */
export interface ApiKeyRotate {
  /**
   * Seconds the old key keeps working after the rotation (default 86400, 24 h; at most 604800, 7 days;
   * 0 stops it at once). A key that expires sooner keeps its own expiry.
   * @type integer
   * @minimum 0
   * @maximum 604800
   */
  gracePeriodSeconds?: number;
}

/** A secret key as listed (never the secret). */
export interface ApiKey {
  /** e.g. `key_3fK9…` */
  id: string;
  name: string;
  scopes: string[];
  /** The first characters of the key, e.g. `acp_sk_live_Ab12`, to recognise it. */
  prefix: string;
  /** @format date-time */
  createdAt: string;
  /** Last request it authenticated, to within a few seconds (batched); null when never used. @format date-time */
  lastUsedAt: string | null;
  /** When it stops authenticating; null: never. @format date-time */
  expiresAt: string | null;
  /** The key this one replaced by rotation, if any. */
  rotatedFrom: string | null;
}

/** A new secret key with its secret, shown only in this answer (201 of createApiKey). */
export interface ApiKeyWithSecret extends ApiKey {
  /** The whole key `<brand>_sk_live_…`: store it now, it is not shown again. */
  secret: string;
}

/** Answer of rotateApiKey: the new key with its secret, and the old key with the end of its grace period. */
export interface ApiKeyRotation {
  key: ApiKeyWithSecret;
  previous: ApiKey;
}

/** A page of secret keys. */
export interface ApiKeyList {
  items: ApiKey[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** Answer of revokeApiKey and revokePublishableKey. */
export interface KeyRevocation {
  id: string;
  /** @format date-time */
  revokedAt: string;
}

/**
 * Request body of `POST /publishable-keys` (createPublishableKey).
 * @additionalProperties false
 */
export interface PublishableKeyCreate {
  /**
   * @minLength 1
   * @maxLength 100
   */
  name: string;
  /** The agent of the organization the key is pinned to (404 naming `agentId` otherwise). @maxLength 64 */
  agentId: string;
  /**
   * Browser origins the key serves: exact `scheme://host[:port]` (`https://example.com`,
   * `http://localhost:3000`); no path, no trailing slash, no wildcard except exactly `http://localhost:*`.
   * @minItems 1
   * @maxItems 50
   */
  allowedOrigins: PublishableKeyOrigin[];
}

/**
 * One allowed origin.
 * @minLength 1
 * @maxLength 300
 */
export type PublishableKeyOrigin = string;

/** A publishable key as listed (never the key itself). */
export interface PublishableKey {
  /** e.g. `pk_3fK9…` */
  id: string;
  name: string;
  /** e.g. `acp_pk_live_Ab12` */
  prefix: string;
  agentId: string;
  /** Normalized origins (lower-case host, default port removed). */
  allowedOrigins: string[];
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  lastUsedAt: string | null;
}

/** A new publishable key with the key itself, shown only in this answer (201 of createPublishableKey). */
export interface PublishableKeyWithSecret extends PublishableKey {
  /** The whole key `<brand>_pk_live_…` to embed in web pages. */
  key: string;
}

/** A page of publishable keys. */
export interface PublishableKeyList {
  items: PublishableKey[];
  nextCursor: string | null;
  hasMore: boolean;
}
