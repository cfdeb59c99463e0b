/**
 * Saved dashboards (scopes dashboards:read/write; paths decided in docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): named sets of widgets, each one figure of the analytics queries
 * (`GET /analytics/overview`, `GET /agents/{agentId}/analytics`) over a range ending now.
 * `GET /dashboards/{id}/data` runs them; it needs analytics:read as well, as the analytics do.
 */
import type { Handler } from '../context';
import { ApiError, notFound, validationError, type FieldError } from '../../domain/errors';
import { listHandler, orgOf } from '../http';
import { isTimeZone } from '../../domain/settings/hours';
import { dashboards } from '../../db/repositories/dashboards';
import { analytics } from '../../db/repositories/observe';
import { ownedIds } from '../../db/repositories/ownership';
import type { Db } from '../../db';
import type { DashboardCreate, DashboardData, DashboardUpdate, DashboardWidget } from '../../schemas/types/settings';

const missing = (id: string) => notFound(`Dashboard ${id}`, 'dashboard_not_found');

/**
 * Checks the widgets beyond the schema.
 * @throws 400 `validation_error` naming each `widgets[i].timeZone` that is not an IANA zone; then 404
 *   `agent_not_found` naming the first `widgets[i].agentId` that is not an agent of the organization
 */
async function checkWidgets(db: Db, orgId: string, widgets: DashboardWidget[] | undefined): Promise<void> {
  if (!widgets) return;
  const errors: FieldError[] = [];
  widgets.forEach((w, i) => {
    if (w.timeZone !== undefined && !isTimeZone(w.timeZone)) errors.push({ field: `widgets[${i}].timeZone`, message: 'must be an IANA time zone, e.g. America/Chicago' });
  });
  if (errors.length) throw validationError(errors);
  const owned = await ownedIds(db, orgId, 'agent', widgets.map((w) => w.agentId).filter((a): a is string => !!a));
  const i = widgets.findIndex((w) => w.agentId && !owned.has(w.agentId));
  if (i >= 0) {
    throw new ApiError(404, 'agent_not_found', `Agent ${widgets[i].agentId} was not found`, { errors: [{ field: `widgets[${i}].agentId`, message: 'is not an agent of this organization' }] });
  }
}

/** GET /dashboards: oldest first. */
export const listDashboards: Handler = listHandler(dashboards.list);

/** POST /dashboards: 201. @throws 400 naming `widgets[i].timeZone`; 404 `agent_not_found` naming `widgets[i].agentId` */
export const createDashboard: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const body = ctx.request.body as unknown as DashboardCreate;
  await checkWidgets(db, orgId, body.widgets);
  const d = await dashboards.insert(db, orgId, { name: body.name, description: body.description ?? null, widgets: JSON.stringify(body.widgets) });
  return { data: d, status: 201 };
};

/** GET /dashboards/{id}. @throws 404 `dashboard_not_found` */
export const getDashboard: Handler = async (ctx, { db }) => {
  const d = await dashboards.get(db, orgOf(ctx), ctx.params.id);
  if (!d) throw missing(ctx.params.id);
  return { data: d };
};

/** PATCH /dashboards/{id}: name, description, widgets (replaced as a whole). */
export const updateDashboard: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const body = ctx.request.body as unknown as DashboardUpdate;
  await checkWidgets(db, orgId, body.widgets);
  const set: Record<string, unknown> = {};
  if (body.name !== undefined) set.name = body.name;
  if (body.description !== undefined) set.description = body.description;
  if (body.widgets !== undefined) set.widgets = JSON.stringify(body.widgets);
  const d = await dashboards.update(db, orgId, ctx.params.id, set);
  if (!d) throw missing(ctx.params.id);
  return { data: d };
};

/** DELETE /dashboards/{id}. */
export const deleteDashboard: Handler = async (ctx, { db }) => {
  if (!(await dashboards.remove(db, orgOf(ctx), ctx.params.id))) throw missing(ctx.params.id);
  return { data: { id: ctx.params.id, deleted: true } };
};

/**
 * GET /dashboards/{id}/data (dashboards:read and analytics:read): each widget's figure over its range
 * ending now, the total and the series (days, or hours for ranges up to 48 hours), from the analytics
 * queries. A widget whose agent was deleted since shows zeros.
 */
export const getDashboardData: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const d = await dashboards.get(db, orgId, ctx.params.id);
  if (!d) throw missing(ctx.params.id);
  const now = new Date();
  const to = now.toISOString();
  const widgets = await Promise.all(
    d.widgets.map(async (w) => {
      const from = new Date(now.getTime() - w.rangeDays * 86_400_000).toISOString();
      const a = await analytics(db, orgId, { agentId: w.agentId ?? undefined, from, to, timeZone: w.timeZone ?? 'UTC' });
      return { title: w.title, metric: w.metric, from, to, total: a.totals[w.metric], series: a.series.map((s) => ({ start: s.start, value: s[w.metric] })) };
    }),
  );
  const data: DashboardData = { dashboardId: d.id, generatedAt: to, widgets };
  return { data };
};

/** Handlers of this area by operationId. */
export const handlers = { listDashboards, createDashboard, getDashboard, updateDashboard, deleteDashboard, getDashboardData };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  listDashboards: { responseSchema: 'DashboardList' },
  createDashboard: { requestSchema: 'DashboardCreate', responseSchema: 'Dashboard' },
  getDashboard: { responseSchema: 'Dashboard' },
  updateDashboard: { requestSchema: 'DashboardUpdate', responseSchema: 'Dashboard' },
  getDashboardData: { responseSchema: 'DashboardData' },
};
