/**
 * Widget handlers (spec "Widget" rows; docs/api-notes.md "Widget"): the widget settings of the agent draft
 * (`GET/PUT /agents/{agentId}/widget`; PUT is an edit of the draft, bumping its version and honouring
 * `If-Match`; publishing freezes the settings with the version).
 */
import type { Handler } from '../context';
import { effectiveWidget, type CompiledAgent } from '../../domain/agents/compile';
import { ApiError } from '../../domain/errors';
import { originAllowed } from '../../domain/keys';
import { getVersion, talkTokenSecret } from '../../db/repositories/agentVersions';
import { toChatSession } from '../../db/repositories/conversations';
import { startConversation } from '../../services/conversations/service';
import { signWidgetSession, WIDGET_SESSION_TTL_SECONDS } from '../widgetSession';
import { sessionFor } from '../conversationView';
import type { WidgetSessionStarted } from '../../schemas/types/chat';
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
  if (!agent.publishedVersionId) throw new ApiError(409, 'no_published_version', 'The agent has not been published yet');
  const v = await getVersion(db, auth.orgId, agent.id, agent.publishedVersionId);
  const widget = effectiveWidget((v?.snapshot as CompiledAgent | undefined)?.widget);
  if (!widget.enabled) throw new ApiError(403, 'widget_disabled', 'The widget is turned off for this agent');
  const { conversation, greeting } = await startConversation(db, auth.orgId, { agentId: agent.id, channel: 'web', keyId: auth.keyId, metadata: { origin } });
  const exp = Math.floor(Date.now() / 1000) + WIDGET_SESSION_TTL_SECONDS;
  const sessionToken = signWidgetSession({ v: 1, org: auth.orgId, cnv: conversation.id, kid: auth.keyId, ori: origin, exp }, await talkTokenSecret(db, auth.orgId));
  // The browser is public: the session without its variables and metadata (api/conversationView.ts).
  const data: WidgetSessionStarted = { session: sessionFor(ctx, toChatSession(conversation)), greeting, sessionToken, expiresAt: new Date(exp * 1000).toISOString(), widget };
  return { data, status: 201, headers: { 'Cache-Control': 'no-store' } };
};

/** Handlers of this area by operationId. */
export const handlers = { getWidget, putWidget, createWidgetSession };

/** Schemas of this area's operations. */
export const routeSchemas = {
  getWidget: { responseSchema: 'WidgetSettings' },
  putWidget: { requestSchema: 'WidgetSettings', responseSchema: 'WidgetSettings' },
  createWidgetSession: { responseSchema: 'WidgetSessionStarted' },
};
