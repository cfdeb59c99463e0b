/** Maps stored agent records to the API's `Agent` shape (schemas/types/agents.ts). */
import type { AgentRecord } from '../../db/repositories/agents';
import type { Agent } from '../../schemas/types/agents';
import { activeGuardrails, effectiveCallerVerification, effectiveDtmf, effectiveGuardrails } from '../../domain/agents/compile';
import { conversationLimits } from '../../domain/conversations/limits';

/** The API view of an agent draft. */
export function toAgentView(a: AgentRecord): Agent {
  return {
    id: a.id,
    name: a.name,
    description: a.description,
    persona: a.persona,
    instructions: a.instructions,
    greeting: a.greeting,
    voicemailMessage: a.voicemailMessage,
    outboundGreeting: a.outboundGreeting ?? null,
    outboundFirstMessageMode: a.outboundFirstMessageMode ?? 'agent_speaks_first',
    language: a.language,
    voiceId: a.voiceId,
    dtmf: effectiveDtmf(a.dtmf),
    variables: a.variables,
    analysis: a.analysis,
    model: a.model ?? null,
    temperature: a.temperature ?? null,
    maxTokens: a.maxTokens ?? null,
    fallbackModel: a.fallbackModel ?? null,
    timeZone: a.timeZone ?? null,
    ...conversationLimits(a),
    attachments: {
      skills: a.skills,
      playbooks: a.playbooks,
      knowledgeSources: a.knowledgeSourceCount,
      guardrails: activeGuardrails(effectiveGuardrails(a.guardrails)).map((g) => g.name),
      callerVerification: effectiveCallerVerification(a.callerVerification).enabled,
    },
    version: a.version,
    publishedVersionId: a.publishedVersionId,
    publishedVersionNumber: a.publishedVersionNumber,
    hasUnpublishedChanges: a.publishedDraftVersion === null || a.publishedDraftVersion !== a.version,
    createdAt: a.createdAt,
    updatedAt: a.updatedAt,
  };
}
