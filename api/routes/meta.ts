/**
 * `GET /meta` (spec group "Meta", path not shown; docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): the service and API version (spec "Versioning": 1.0.0), the scope catalogue with what each
 * grants and whether the caller holds it, the limits (upload and body size, page sizes, the calling key's
 * rate limit with its burst limit), the caller's organization and credential (never a secret), and the server time. Any
 * authenticated secret key or token may call it; it needs no scope.
 */
import type { Handler } from '../context';
import { ALL_SCOPES, RESERVED_SCOPES } from '../../domain/scopes';
import { SCOPE_DESCRIPTIONS } from '../../domain/settings/scopeCatalogue';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../../db/pagination';
import { getOrganization } from '../../db/repositories/organizations';
import { getActiveKey } from '../../db/repositories/apiKeys';
import { MAX_UPLOAD_BYTES } from './uploads';
import { orgOf } from '../http';
import { keyPolicies, rateLimitDefaults } from '../middleware/rateLimit';
import type { Meta } from '../../schemas/types/settings';

/** The API description's version (spec "Versioning"). */
export const API_VERSION = '1.0.0';

/** GET /meta. */
export const getMeta: Handler = async (ctx, { db, config }) => {
  const auth = ctx.state.auth!;
  const orgId = orgOf(ctx);
  const { points, windowSeconds, burst } = keyPolicies(auth, rateLimitDefaults(config));
  const [org, key] = await Promise.all([getOrganization(db, orgId), auth.kind === 'secret' ? getActiveKey(db, orgId, 'secret', auth.keyId) : undefined]);
  const data: Meta = {
    service: { name: 'agent-control-plane', version: API_VERSION },
    api: { version: API_VERSION, basePath: '/api/v1', openapi: '/api/v1/openapi.json' },
    scopes: ALL_SCOPES.map((name) => ({ name, description: SCOPE_DESCRIPTIONS[name], reserved: RESERVED_SCOPES.has(name), granted: auth.scopes.has(name) })),
    limits: {
      uploadMaxBytes: MAX_UPLOAD_BYTES,
      bodyMaxBytes: config.bodyLimitBytes,
      pageSize: { default: DEFAULT_PAGE_LIMIT, max: MAX_PAGE_LIMIT },
      rateLimit: { points, windowSeconds, burst: burst ? { points: burst.points, windowSeconds: burst.seconds } : null },
    },
    caller: {
      organization: { id: orgId, name: org?.name ?? '' },
      key: {
        id: auth.keyId,
        kind: auth.kind,
        prefix: key?.displayPrefix ?? null,
        name: key?.name ?? null,
        scopes: [...auth.scopes].map(String).sort(),
        expiresAt: auth.expiresAt?.toISOString() ?? null,
      },
    },
    serverTime: new Date().toISOString(),
  };
  return { data };
};

/** Handlers of this area by operationId. */
export const handlers = { getMeta };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = { getMeta: { responseSchema: 'Meta' } };
