/**
 * All activities of the worker, built from their dependencies (DESIGN.md "activities/"). Each area
 * exports a factory `create<Area>Activities(deps)`; activities must be idempotent because Temporal
 * retries them.
 */
import type { Logger } from 'pino';
import type { AppConfig } from '../config';
import type { Db } from '../db';
import { createKnowledgeActivities } from './knowledge';
import { createKnowledgeReembedActivities } from './knowledgeReembed';
import { createKnowledgeRefreshActivities } from './knowledgeRefresh';
import { createAgentActivities } from './agents';
import { createWebhookActivities } from './webhooks';
import { createSmsActivities } from './sms';
import { createOutboundActivities } from './outbound';
import { createSimulationActivities } from './simulations';
import { createEvalActivities } from './evals';
import { createBillingActivities } from './billing';
import { createReportActivities } from './reports';
import { createIntegrationActivities } from './integrations';
import { createVoiceActivities } from './voice';
import { createCallActivities } from './calls';
import { createAnalysisActivities } from './analysis';

/** What activities may use. */
export interface ActivityDeps {
  db: Db;
  config: AppConfig;
  logger: Logger;
}

/** Every activity function by name (the worker registers this object). */
export function createActivities(deps: ActivityDeps): Record<string, (...args: any[]) => Promise<unknown>> {
  return { ...createAgentActivities(deps), ...createKnowledgeActivities(deps), ...createKnowledgeReembedActivities(deps), ...createKnowledgeRefreshActivities(deps), ...createWebhookActivities(deps), ...createSmsActivities(deps), ...createOutboundActivities(deps), ...createSimulationActivities(deps), ...createEvalActivities(deps), ...createBillingActivities(deps), ...createReportActivities(deps), ...createIntegrationActivities(deps), ...createVoiceActivities(deps), ...createCallActivities(deps), ...createAnalysisActivities(deps) };
}
