/**
 * `GET /onboarding` (spec group "Onboarding", path not shown; docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): the organization's setup checklist computed from its real state on every request
 * (nothing is stored or ticked by hand), each step with the operation that completes it. Needs no scope:
 * it shows only whether things exist, never what they are.
 */
import type { Handler } from '../context';
import { onboardingProofs } from '../../db/repositories/onboarding';
import { orgOf } from '../http';
import type { Onboarding, OnboardingStep } from '../../schemas/types/settings';

/** The steps in the order a new organization usually takes them, with the operation that completes each. */
const STEPS: { key: OnboardingStep['key']; title: string; method: string; href: string; operationId: string }[] = [
  { key: 'first_agent', title: 'Create your first agent', method: 'POST', href: '/api/v1/agents', operationId: 'createAgent' },
  { key: 'knowledge_ready', title: 'Add knowledge and let it finish indexing', method: 'POST', href: '/api/v1/agents/{agentId}/knowledge/sources', operationId: 'createKnowledgeSource' },
  { key: 'first_publish', title: 'Publish an agent', method: 'POST', href: '/api/v1/agents/{id}/publish', operationId: 'publishAgent' },
  { key: 'number_purchased', title: 'Purchase a phone number', method: 'POST', href: '/api/v1/numbers/purchase', operationId: 'purchaseNumber' },
  { key: 'sms_registration_active', title: 'Get the 10DLC registration active', method: 'POST', href: '/api/v1/sms/submit', operationId: 'submitSMSRegistration' },
  { key: 'webhook_verified', title: 'Verify a webhook endpoint (a delivery succeeded)', method: 'POST', href: '/api/v1/webhooks/{id}/test', operationId: 'testWebhook' },
  { key: 'first_conversation', title: 'Have a first conversation', method: 'POST', href: '/api/v1/chat/sessions', operationId: 'createChatSession' },
];

/** GET /onboarding. */
export const getOnboarding: Handler = async (ctx, { db }) => {
  const proofs = await onboardingProofs(db, orgOf(ctx));
  const steps: OnboardingStep[] = STEPS.map((s) => ({
    key: s.key,
    title: s.title,
    done: proofs[s.key] !== null,
    completedAt: proofs[s.key],
    link: { method: s.method, href: s.href, operationId: s.operationId, docs: `/docs#operation/${s.operationId}` },
  }));
  const completed = steps.filter((s) => s.done).length;
  const data: Onboarding = { steps, completed, total: steps.length, next: steps.find((s) => !s.done)?.key ?? null };
  return { data };
};

/** Handlers of this area by operationId. */
export const handlers = { getOnboarding };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = { getOnboarding: { responseSchema: 'Onboarding' } };
