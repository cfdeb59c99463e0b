/**
 * Widget handlers (spec "Widget" rows; docs/api-notes.md "Widget"): the widget settings of the agent draft
 * (`GET/PUT /agents/{agentId}/widget`; PUT is an edit of the draft, bumping its version and honouring
 * `If-Match`; publishing freezes the settings with the version).
 */
import type { Handler } from '../context';
import { effectiveWidget, type CompiledAgent } from '../../domain/agents/compile';
import { ApiError } from '../../domain/errors';
import { originAllowed } from '../../domain/keys';
import crypto from 'node:crypto';
import { getVersion, talkTokenSecret } from '../../db/repositories/agentVersions';
import { getActiveKey } from '../../db/repositories/apiKeys';
import { toChatSession } from '../../db/repositories/conversations';
import { requireConversation, startConversation } from '../../services/conversations/service';
import { signWidgetSession, WIDGET_SESSION_TTL_SECONDS } from '../widgetSession';
import { signWidgetVoiceToken, WIDGET_VOICE_TOKEN_TTL_SECONDS } from '../widgetVoice';
import { sessionFor } from '../conversationView';
import { publicOrigin } from '../publicOrigin';
import type { WidgetSessionCreate, WidgetSessionStarted, WidgetVoiceToken } from '../../schemas/types/chat';
import { pickAgentVersion } from '../../services/agents/traffic';
import { requireAgent } from '../agents/http';
import { draftPartHandlers } from './guardrails';

const widget = draftPartHandlers('widget', 'WidgetSettings', effectiveWidget);

/** GET /agents/{agentId}/widget (widgets:read): the draft's widget settings (defaults before the first PUT). */
export const getWidget: Handler = widget.get;

/** PUT /agents/{agentId}/widget (widgets:write): replaces the widget settings (400 naming fields). */
export const putWidget: Handler = widget.put;

/**
 * POST /chat/widget/sessions (createWidgetSession; `Authorization: Bearer <publishable key>`): starts a
 * `web` chat session on the key's agent's published version and returns it with its greeting (the
 * widget's override when set), the widget settings of that version and a session token for this session
 * only (api/widgetSession.ts). Refusals: 403 `origin_not_allowed` (the request's `Origin` is not on the
 * key's list, or is missing), 409 `no_published_version`, 403 `widget_disabled`.
 */
export const createWidgetSession: Handler = async (ctx, { db }) => {
  const auth = ctx.state.auth!;
  const pub = auth.publishable;
  const origin = ctx.get('origin');
  if (!pub || !originAllowed(origin || undefined, pub.allowedOrigins)) {
    throw new ApiError(403, 'origin_not_allowed', origin ? `${origin} is not an allowed origin of this publishable key` : 'A widget session starts from a web page: the request has no Origin');
  }
  const agent = await requireAgent(db, auth.orgId, pub.agentId);
  const body = (ctx.request.body ?? {}) as WidgetSessionCreate;
  // The traffic split picks the version, sticky on the visitor (docs/api-notes.md "Traffic splits"); its widget settings apply.
  const picked = agent.publishedVersionId ? await pickAgentVersion(db, auth.orgId, agent.id, body.visitorId ?? null) : null;
  if (!picked) throw new ApiError(409, 'no_published_version', 'The agent has not been published yet');
  const v = await getVersion(db, auth.orgId, agent.id, picked.versionId);
  const widget = effectiveWidget((v?.snapshot as CompiledAgent | undefined)?.widget);
  if (!widget.enabled) throw new ApiError(403, 'widget_disabled', 'The widget is turned off for this agent');
  const { conversation, greeting } = await startConversation(db, auth.orgId, {
    agentId: agent.id,
    channel: 'web',
    keyId: auth.keyId,
    metadata: { origin },
    versionId: picked.versionId,
    trafficSplit: picked.split,
  });
  const exp = Math.floor(Date.now() / 1000) + WIDGET_SESSION_TTL_SECONDS;
  const sessionToken = signWidgetSession({ v: 1, org: auth.orgId, cnv: conversation.id, kid: auth.keyId, ori: origin, exp }, await talkTokenSecret(db, auth.orgId));
  // The browser is public: the session without its variables and metadata (api/conversationView.ts).
  const data: WidgetSessionStarted = {
    session: sessionFor(ctx, toChatSession(conversation)),
    greeting,
    sessionToken,
    expiresAt: new Date(exp * 1000).toISOString(),
    widget,
    voice: voiceUsable(v?.snapshot as CompiledAgent | undefined),
  };
  return { data, status: 201, headers: { 'Cache-Control': 'no-store' } };
};

/** The ConversationRelay endpoint's path (api/voice/relay.ts `RELAY_PATH`, which this module cannot import: it sits below api/app.ts). */
const WIDGET_VOICE_RELAY_PATH = '/api/v1/voice/relay';

/**
 * Whether the widget of a frozen version offers a voice call: its compiled voice resolved (domain/agents/compile.ts)
 * and its widget settings do not turn voice off.
 */
function voiceUsable(snapshot: CompiledAgent | undefined): boolean {
  return !!snapshot?.voice && effectiveWidget(snapshot.widget).voice !== false;
}

/**
 * POST /chat/widget/sessions/{id}/voice-token (createWidgetVoiceToken; `Authorization: Bearer <widget session
 * token>` of session `{id}`, from its page origin) → 201 `WidgetVoiceToken`: a widget voice token
 * (api/widgetVoice.ts) for the version the session's chat runs (the key's agent's published one, or the one its
 * traffic split picked), to open the ConversationRelay endpoint with
 * (docs/api-notes.md "Voice in the widget"). The session token's checks (its key live and still allowing the
 * origin, the widget on; api/widgetSession.ts) ran before. Refusals: 401 `invalid_token` (a key instead of
 * the session token), 403 `session_token_mismatch` (another session's token), 403 `origin_not_allowed`
 * (another origin), 404 `conversation_not_found`, 409 `conversation_ended`, 409 `voice_unavailable` (the
 * published version has no usable voice).
 */
export const createWidgetVoiceToken: Handler = async (ctx, { db, config }) => {
  const auth = ctx.state.auth!;
  if (!auth.session) {
    throw new ApiError(401, 'invalid_token', "A widget voice token is minted for a widget session: send that session's token (sessionToken of POST /chat/widget/sessions)", {
      headers: { 'WWW-Authenticate': 'Bearer realm="api", error="invalid_token"' },
    });
  }
  if (auth.session.conversationId !== ctx.params.id) throw new ApiError(403, 'session_token_mismatch', 'This session token belongs to another chat session');
  const c = await requireConversation(db, auth.orgId, ctx.params.id, ['web']);
  if (c.status !== 'active') throw new ApiError(409, 'conversation_ended', `The conversation ended (${c.endReason ?? 'ended'}); start a new widget session`);
  const key = await getActiveKey(db, auth.orgId, 'publishable', auth.keyId);
  if (!key?.agentId) throw new ApiError(401, 'invalid_token', 'The publishable key of this session is no longer active; start a new widget session');
  const agent = await requireAgent(db, auth.orgId, key.agentId);
  // The call runs the version the widget's chat runs (a traffic split picked it for this visitor), else the published one.
  const versionId = c.versionId ?? agent.publishedVersionId;
  const v = versionId ? await getVersion(db, auth.orgId, agent.id, versionId) : undefined;
  if (!v || !voiceUsable(v.snapshot as CompiledAgent)) throw new ApiError(409, 'voice_unavailable', 'This assistant does not take voice calls in the widget (its published version has no voice, or its widget settings turn voice off)');
  const exp = Math.floor(Date.now() / 1000) + WIDGET_VOICE_TOKEN_TTL_SECONDS;
  const token = signWidgetVoiceToken(
    { v: 1, org: auth.orgId, agt: agent.id, ver: v.version.id, kid: auth.keyId, ori: auth.session.origin, cnv: c.id, exp, jti: crypto.randomUUID() },
    await talkTokenSecret(db, auth.orgId),
  );
  const ws = publicOrigin(ctx, config.publicBaseUrl).replace(/^http/, 'ws');
  const data: WidgetVoiceToken = {
    token,
    relayUrl: `${ws}${WIDGET_VOICE_RELAY_PATH}?token=${encodeURIComponent(token)}`,
    agentId: agent.id,
    versionId: v.version.id,
    expiresAt: new Date(exp * 1000).toISOString(),
  };
  return { data, status: 201, headers: { 'Cache-Control': 'no-store' } };
};

/** Handlers of this area by operationId. */
export const handlers = { getWidget, putWidget, createWidgetSession, createWidgetVoiceToken };

/** Schemas of this area's operations. */
export const routeSchemas = {
  getWidget: { responseSchema: 'WidgetSettings' },
  putWidget: { requestSchema: 'WidgetSettings', responseSchema: 'WidgetSettings' },
  createWidgetSession: { requestSchema: 'WidgetSessionCreate', responseSchema: 'WidgetSessionStarted' },
  createWidgetVoiceToken: { responseSchema: 'WidgetVoiceToken' },
};
