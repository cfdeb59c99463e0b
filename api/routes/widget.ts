/**
 * Widget handlers (spec "Widget" rows; README "Widget"): the widget settings of the agent draft
 * (`GET/PUT /agents/{agentId}/widget`; PUT is an edit of the draft, bumping its version and honouring
 * `If-Match`; publishing freezes the settings with the version).
 */
import type { Handler } from '../context';
import { validateBody } from '../../domain/validation';
import { setAgentFields } from '../../db/repositories/agents';
import { effectiveWidget } from '../../domain/agents/compile';
import type { WidgetSettings } from '../../schemas/types/agents';
import { etag, requireAgent, runDraftEdit } from '../agents/http';
import { param } from './agents';
import { orgOf } from '../http';

/** GET /agents/{agentId}/widget (widgets:read): the draft's widget settings (defaults before the first PUT). */
export const getWidget: Handler = async (ctx, { db }) => {
  const agent = await requireAgent(db, orgOf(ctx), param(ctx, 'agentId'));
  return { data: effectiveWidget(agent.widget), headers: etag(agent.version) };
};

/** PUT /agents/{agentId}/widget (widgets:write): replaces the widget settings (400 naming fields). */
export const putWidget: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'agentId');
  const body = validateBody<WidgetSettings>('WidgetSettings', ctx.request.body);
  const out = await runDraftEdit(ctx, db, agentId, (trx) => setAgentFields(trx, orgId, agentId, { widget: body }));
  return { data: body, headers: etag(out.version) };
};

/** Handlers of this area by operationId. */
export const handlers = { getWidget, putWidget };

/** Schemas of this area's operations. */
export const routeSchemas = {
  getWidget: { responseSchema: 'WidgetSettings' },
  putWidget: { requestSchema: 'WidgetSettings', responseSchema: 'WidgetSettings' },
};
