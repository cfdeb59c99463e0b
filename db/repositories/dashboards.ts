/** Saved dashboards (scopes dashboards:read/write; docs/api-notes.md "Variables, escalation, onboarding, meta and settings"). */
import { iso } from '../timestamps';
import { orgTable } from './orgTable';
import type { Dashboard } from '../../schemas/types/settings';

function toDashboard(r: Record<string, any>): Dashboard {
  return { id: r.id, name: r.name, description: r.description ?? null, widgets: r.widgets, createdAt: iso(r.created_at)!, updatedAt: iso(r.updated_at)! };
}

/** CRUD of `dashboards` (db/repositories/orgTable.ts); `widgets` is a JSON column (pass it stringified). */
export const dashboards = orgTable('dashboards', 'dsh', toDashboard);
