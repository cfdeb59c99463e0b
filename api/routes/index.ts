/**
 * Handlers by operationId, gathered from one module per area (`api/routes/<area>.ts`, each exporting
 * `handlers` and optionally `routeSchemas`). An operation of the route table without a handler answers 501.
 */
import type { Handler } from '../context';
import type { RouteDef } from './table';
import * as sms from './sms';
import * as numbers from './numbers';
import * as agents from './agents';
import * as skills from './skills';
import * as guardrails from './guardrails';
import * as playbooks from './playbooks';
import * as voices from './voices';
import * as agentTest from './test';
import * as evals from './evals';
import * as webhooks from './webhooks';
import * as audit from './audit';
import * as knowledge from './knowledge';
import * as uploads from './uploads';
import * as outbound from './outbound';
import * as chat from './chat';
import * as observe from './observe';
import * as widget from './widget';
import * as apiKeys from './apiKeys';
import * as publishableKeys from './publishableKeys';
import * as billing from './billing';
import * as variables from './variables';
import * as escalation from './escalation';
import * as onboarding from './onboarding';
import * as meta from './meta';
import * as dashboards from './dashboards';
import * as reports from './reports';
import * as phoneSettings from './phoneSettings';
import * as team from './team';
import * as oauthClients from './oauthClients';
import * as integrations from './integrations';
import * as records from './records';
import * as calls from './calls';
import * as models from './models';
import * as responses from './responses';
import * as deletes from './deletes';
import * as analysis from './analysis';
import * as traffic from './traffic';
import * as control from './control';

/** What an area module exports. */
export interface AreaModule {
  handlers: Partial<Record<string, Handler>>;
  /** Request/response schema names (and other documentation fields) per operationId, merged into the route table. */
  routeSchemas?: Partial<Record<string, Pick<RouteDef, 'requestSchema' | 'responseSchema' | 'bodyChecks'>>>;
}

const AREAS: AreaModule[] = [sms, numbers, agents, skills, guardrails, playbooks, voices, agentTest, evals, knowledge, uploads, webhooks, audit, outbound, chat, observe, widget, apiKeys, publishableKeys, billing, variables, escalation, onboarding, meta, dashboards, reports, phoneSettings, team, oauthClients, integrations, records, calls, responses, models, traffic, deletes, analysis, control];

/** operationId → handler. */
export const HANDLERS: Partial<Record<string, Handler>> = Object.assign({}, ...AREAS.map((a) => a.handlers));

/** operationId → schema names declared by the areas. */
export const ROUTE_SCHEMAS: Partial<Record<string, Pick<RouteDef, 'requestSchema' | 'responseSchema' | 'bodyChecks'>>> = Object.assign(
  {},
  ...AREAS.map((a) => a.routeSchemas ?? {}),
);
