/**
 * Integrations (spec Integrations rows, error codes `integration_unavailable`, `integration_not_connected`,
 * `sheet_not_accessible`; scope rules on `integrations:read` and `integrations:connect`; docs/api-notes.md
 * "Integrations and records"):
 * - `GET /integrations/catalog`, `GET /integrations` (integrations:read): kinds, and status per kind —
 *   never a token or a secret;
 * - `POST /integrations/{kind}/connect` (integrations:connect): credentials validated at the provider and
 *   stored sealed, or an OAuth authorization URL; `GET /integrations/{kind}/oauth/callback` (no key: the
 *   state names the organization) completes it; `DELETE /integrations/{kind}` disconnects;
 * - `POST /integrations/{kind}/sync` (integrations:write + records:write): starts `records-sync/{connectionId}`;
 * - `POST /agents/{agentId}/integrations/{kind}/provision` (integrations:write + skills:write): the
 *   kind's skills created or updated in the agent's draft.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Knex } from 'knex';
import type { AppContext, AppDeps, Handler } from '../context';
import { ApiError, validationError } from '../../domain/errors';
import { INTEGRATION_KINDS, credentialErrors, spreadsheetIdOf, type IntegrationKindDef } from '../../domain/integrations/catalog';
import { skillConfigErrors } from '../../domain/agents/skillTypes';
import { deleteConnection, getConnection, listConnections, mergeConnectionConfig, toStatus, type ConnectionRecord } from '../../db/repositories/integrations';
import { insertSkill, skillsByName, updateSkillRow } from '../../db/repositories/agentSkills';
import { integrationsAdapter, IntegrationProviderError } from '../../providers/integrations';
import { beginOAuth, completeOAuth, connectMethodOf, connectWithCredentials, kindAvailable, kindOr404, openCredentials, requireConnection } from '../../services/integrations/connections';
import { startWorkflow, workflowIds } from '../../temporal.config';
import { orgOf, requireTemporal, temporalUnavailable } from '../http';
import { etag, requireAgent, runDraftEdit } from '../agents/http';
import { param } from './agents';
import { setAuditResource } from '../middleware/audit';
import type { IntegrationCatalog, IntegrationConnectRequest, IntegrationConnectResult, IntegrationProvisionRequest, IntegrationProvisionResult, IntegrationStatusList } from '../../schemas/types/integrations';

/** GET /integrations/catalog: every kind with how it connects, what it provisions and whether this deployment offers it. */
export const listIntegrationCatalog: Handler = async () => {
  const data: IntegrationCatalog = {
    items: INTEGRATION_KINDS.map((k) => ({ ...k, oauthScopes: [...k.oauthScopes], credentialFields: [...k.credentialFields], provisions: [...k.provisions], connectMethod: connectMethodOf(k), available: connectMethodOf(k) === 'credentials' || kindAvailable(k.kind) })),
  };
  return { data };
};

/** GET /integrations: the status of every kind for the caller's organization (status only, never tokens). */
export const listIntegrations: Handler = async (ctx, { db }) => {
  const byKind = new Map((await listConnections(db, orgOf(ctx))).map((c) => [c.kind, c]));
  const data: IntegrationStatusList = { items: INTEGRATION_KINDS.map((k) => toStatus(k.kind, byKind.get(k.kind))) };
  return { data };
};

/** Starts `records-sync/{connectionId}` (a running one is kept). @throws ApiError 503 `temporal_unavailable` */
async function startSync(ctx: AppContext, deps: AppDeps, c: ConnectionRecord): Promise<void> {
  const t = requireTemporal(deps);
  const workflowId = workflowIds.recordsSync(c.id);
  try {
    await startWorkflow(t, 'recordsSync', { workflowId, args: [{ orgId: c.orgId, connectionId: c.id }], orgId: c.orgId, resourceId: c.id, workflowIdConflictPolicy: 'USE_EXISTING' });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    ctx.state.log.error({ err, workflowId }, 'could not start a workflow');
    throw temporalUnavailable('The records sync could not be started; try again later');
  }
}

/**
 * POST /integrations/{kind}/connect (integrations:connect). Credentials kinds: `credentials` validated at
 * the provider, stored sealed, 200 `connected` (a CRM's records sync starts when this process has a Temporal client).
 * OAuth kinds: 200 `authorization_required` with the provider's `authorizationUrl` (state bound to the
 * organization, PKCE S256), completed by the callback within 10 minutes.
 * @throws 404 `integration_kind_not_found`; 400 `integration_unavailable` (no OAuth app here); 400
 *   naming `credentials.*`; 422 `integration_credentials_rejected` when the provider refuses them
 */
export const connectIntegration: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const def = kindOr404(param(ctx, 'kind'));
  const body = (ctx.request.body ?? {}) as IntegrationConnectRequest;
  // HubSpot with its OAuth app configured also takes a private app's token (services/integrations/connections.ts).
  if (connectMethodOf(def) === 'oauth' && (def.connectMethod === 'oauth' || body.credentials === undefined)) {
    if (body.credentials !== undefined) throw validationError([{ field: 'credentials', message: `${def.kind} connects through OAuth: send no credentials and open the authorizationUrl` }]);
    const { authorizationUrl, expiresAt } = await beginOAuth(deps.db, orgId, def, deps.config.publicBaseUrl);
    const current = await getConnection(deps.db, orgId, def.kind);
    const data: IntegrationConnectResult = { kind: def.kind, status: 'authorization_required', authorizationUrl, expiresAt: expiresAt.toISOString(), integration: current ? toStatus(def.kind, current) : null };
    return { data, message: 'Open authorizationUrl in a browser; the provider returns to the callback, which completes the connection' };
  }
  const errors = credentialErrors(def, body.credentials);
  if (errors.length) throw validationError(errors);
  const c = await connectWithCredentials(deps.db, orgId, def, body.credentials!);
  setAuditResource(ctx, 'integration_connection', c.id);
  if (def.syncsRecords && deps.temporal) await startSync(ctx, deps, c).catch((err) => ctx.state.log.warn({ err }, 'records sync not started at connect'));
  const data: IntegrationConnectResult = { kind: def.kind, status: 'connected', authorizationUrl: null, expiresAt: null, integration: toStatus(def.kind, c) };
  return { data };
};

/**
 * GET /integrations/{kind}/oauth/callback?code&state (no API key: the provider redirects the user's
 * browser here; RFC 6749 §4.1.2). 200 with the connected status.
 * @throws 400 `invalid_oauth_state` (unknown, used, expired, other kind: tampering is refused); 400 `oauth_denied`
 */
export const completeIntegrationOAuth: Handler = async (ctx, { db }) => {
  const def = kindOr404(param(ctx, 'kind'));
  const one = (v: unknown) => (Array.isArray(v) ? v[0] : typeof v === 'string' ? v : undefined);
  const c = await completeOAuth(db, def, { state: one(ctx.query.state), code: one(ctx.query.code), error: one(ctx.query.error) });
  return { data: toStatus(def.kind, c), message: `${def.name} is connected; you can close this window` };
};

/** DELETE /integrations/{kind} (integrations:connect): forgets the connection and its sealed credentials; synced records stay. @throws 404 `integration_not_connected` */
export const disconnectIntegration: Handler = async (ctx, { db }) => {
  const def = kindOr404(param(ctx, 'kind'));
  const id = await deleteConnection(db, orgOf(ctx), def.kind);
  if (!id) throw new ApiError(404, 'integration_not_connected', `${def.kind} is not connected`);
  setAuditResource(ctx, 'integration_connection', id);
  return { data: { kind: def.kind, connectionId: id, disconnected: true } };
};

/**
 * POST /integrations/{kind}/sync (integrations:write + records:write): starts `records-sync/{connectionId}`
 * (a running sync is kept); 202 with the status, whose `sync` shows the progress.
 * @throws 409 `integration_not_connected`; 400 naming `kind` for a kind without records; 503 without Temporal
 */
export const syncIntegrationRecords: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const def = kindOr404(param(ctx, 'kind'));
  if (!def.syncsRecords) throw validationError([{ field: 'kind', message: `${def.kind} holds no records to sync` }]);
  const c = await requireConnection(deps.db, orgId, def.kind);
  await startSync(ctx, deps, c);
  setAuditResource(ctx, 'integration_connection', c.id);
  return { data: toStatus(def.kind, (await getConnection(deps.db, orgId, def.kind)) ?? c), status: 202 };
};

/** The skill config a kind provisions, after checking what the provider must confirm. */
async function provisionConfig(db: AppDeps['db'], orgId: string, def: IntegrationKindDef, c: ConnectionRecord, body: IntegrationProvisionRequest): Promise<Record<string, unknown>> {
  switch (def.kind) {
    case 'google_calendar':
    case 'calcom': {
      const timeZone = body.timeZone ?? 'UTC';
      try {
        new Intl.DateTimeFormat('en-US', { timeZone });
      } catch {
        throw validationError([{ field: 'timeZone', message: 'must be an IANA time zone, e.g. America/Chicago' }]);
      }
      if (def.kind === 'calcom') {
        if (body.eventTypeId === undefined) throw validationError([{ field: 'eventTypeId', message: 'is required: the Cal.com event type bookings are made for' }]);
        return { integration: 'calcom', eventTypeId: body.eventTypeId, durationMinutes: body.durationMinutes ?? 30, timeZone };
      }
      return { integration: 'google_calendar', calendarId: body.calendarId ?? 'primary', durationMinutes: body.durationMinutes ?? 30, timeZone };
    }
    case 'google_sheets': {
      if (!body.spreadsheetUrl) throw validationError([{ field: 'spreadsheetUrl', message: 'is required: the link of the sheet holding the records' }]);
      const notAccessible = (why: string) =>
        new ApiError(404, 'sheet_not_accessible', `The spreadsheet cannot be opened: ${why}`, { errors: [{ field: 'spreadsheetUrl', message: 'is not a spreadsheet the connected account can read' }] });
      const id = spreadsheetIdOf(body.spreadsheetUrl);
      if (!id) throw notAccessible('the link is not a Google Sheets link (https://docs.google.com/spreadsheets/d/…)');
      let sheet;
      try {
        sheet = await integrationsAdapter(process.env, c.provider).openSpreadsheet(openCredentials(c.credentialsSealed), id);
      } catch (err) {
        if (err instanceof IntegrationProviderError && err.code === 'not_found') throw notAccessible(`it is not shared with ${c.accountLabel ?? 'the connected account'}`);
        throw err;
      }
      await mergeConnectionConfig(db, orgId, c.id, { spreadsheetId: sheet.spreadsheetId, spreadsheetTitle: sheet.title });
      return { integration: 'google_sheets', matchOn: ['phone', 'email', 'name'] };
    }
    case 'hubspot':
      return { integration: 'hubspot', matchOn: ['phone', 'email', 'name'] };
    case 'http': {
      const base = openCredentials(c.credentialsSealed).baseUrl.replace(/\/$/, '');
      return { integration: 'http', url: `${base}${body.path ?? '/'}`, method: body.method ?? 'POST' };
    }
  }
}

/**
 * POST /agents/{agentId}/integrations/{kind}/provision (integrations:write + skills:write): creates or
 * updates (by name) the kind's skills in the agent's draft, wired to the connection; 201 when a skill was
 * created, else 200. Honours `If-Match` like every draft edit.
 * @throws 404 `agent_not_found` / `integration_kind_not_found`; 409 `integration_not_connected`;
 *   404 `sheet_not_accessible`; 409 `skill_name_taken` when a skill of that name has another type
 */
export const provisionIntegration: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'agentId');
  const def = kindOr404(param(ctx, 'kind'));
  const body = (ctx.request.body ?? {}) as IntegrationProvisionRequest;
  await requireAgent(deps.db, orgId, agentId);
  const c = await requireConnection(deps.db, orgId, def.kind);
  const config = await provisionConfig(deps.db, orgId, def, c, body);
  const spec = def.provisions[0];
  const name = body.skillName ?? spec.skillName;
  const configErrors = skillConfigErrors(spec.skillType, config);
  if (configErrors.length) throw validationError(configErrors);
  const out = await runDraftEdit(ctx, deps.db, agentId, async (trx: Knex.Transaction) => {
    const existing = (await skillsByName(trx, orgId, agentId)).get(name);
    if (existing && existing.type !== spec.skillType) throw new ApiError(409, 'skill_name_taken', `The draft has a ${existing.type} skill named "${name}"; pass another skillName`, { errors: [{ field: 'skillName', message: 'names a skill of another type' }] });
    const description = `${def.name} (provisioned)`;
    const skill = existing ? (await updateSkillRow(trx, orgId, agentId, existing.id, { config }))! : await insertSkill(trx, orgId, agentId, { name, type: spec.skillType, description, config });
    return { skill, created: !existing };
  });
  const { skill, created } = out.result;
  const data: IntegrationProvisionResult = {
    kind: def.kind,
    agentId,
    connectionId: c.id,
    skills: [{ id: skill.id, name: skill.name, type: skill.type, config: skill.config, created }],
    draftVersion: out.version,
  };
  return { data, status: created ? 201 : 200, headers: etag(out.version) };
};

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = {
  listIntegrationCatalog,
  listIntegrations,
  connectIntegration,
  completeIntegrationOAuth,
  disconnectIntegration,
  syncIntegrationRecords,
  provisionIntegration,
};

/** Schemas of this area's operations. */
export const routeSchemas = {
  listIntegrationCatalog: { responseSchema: 'IntegrationCatalog' },
  listIntegrations: { responseSchema: 'IntegrationStatusList' },
  connectIntegration: { requestSchema: 'IntegrationConnectRequest', responseSchema: 'IntegrationConnectResult' },
  completeIntegrationOAuth: { responseSchema: 'IntegrationStatus' },
  syncIntegrationRecords: { responseSchema: 'IntegrationStatus' },
  provisionIntegration: { requestSchema: 'IntegrationProvisionRequest', responseSchema: 'IntegrationProvisionResult' },
};
