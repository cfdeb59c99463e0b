/**
 * Shapes of an agent draft as the domain works on it (compile, report, present). The repositories in
 * db/repositories/agents.ts load them; nothing here touches the database.
 */
import type { WidgetSettings } from '../../schemas/types/agents';
import type { Agent } from '../../schemas/types/agents';
import type { CallerVerification, Guardrails } from '../../schemas/types/guardrails';
import type { PlaybookGraph } from '../../schemas/types/playbooks';
import type { OrgVariableRef } from '../settings/variables';
import type { ConversationLimits } from '../conversations/limits';

/** The draft's own profile fields, as the API shows them (schemas/types/agents.ts Agent). */
export type AgentProfile = Pick<Agent, 'name' | 'description' | 'persona' | 'instructions' | 'greeting' | 'voicemailMessage' | 'language' | 'voiceId' | 'dtmf' | 'variables'> &
  // The outbound first line (docs/voice.md "Outbound first line"); absent: the greeting, the agent first.
  Partial<Pick<Agent, 'outboundGreeting' | 'outboundFirstMessageMode'>> &
  Partial<AgentModelSettings>;

/**
 * The draft's model settings (docs/api-notes.md "Agents": model settings); each null or absent: the deployment's
 * default (LLM_MODEL, the model's own temperature and limit, no fallback, the organization's time zone).
 */
export type AgentModelSettings = Pick<Agent, 'model' | 'temperature' | 'maxTokens' | 'fallbackModel' | 'timeZone'>;

/** Stored extraction fields of the post-conversation analysis (`{fields: []}` by default). */
export type AgentAnalysis = Agent['analysis'];

/** A stored agent draft, camelCase, with what is attached to it. */
export interface AgentRecord extends AgentProfile, Partial<ConversationLimits> {
  id: string;
  orgId: string;
  /** Stored guardrails; `{}` until first PUT (defaults are applied by the API layer). */
  guardrails: Partial<Guardrails>;
  callerVerification: Partial<CallerVerification>;
  /** Stored widget settings; `{}` until first PUT. */
  widget: Partial<WidgetSettings>;
  /** Extraction fields of the post-conversation analysis (docs/api-notes.md "Conversation analysis"). */
  analysis: AgentAnalysis;
  version: number;
  publishedVersionId: string | null;
  publishedVersionNumber: number | null;
  /** Draft version the published version was compiled from (null when never published). */
  publishedDraftVersion: number | null;
  skills: { id: string; name: string; type: string }[];
  playbooks: { id: string; name: string }[];
  knowledgeSourceCount: number;
  createdAt: string;
  updatedAt: string;
}

/** A knowledge source as the compiler and the report see it. */
export interface KnowledgeSourceSummary {
  id: string;
  kind: string | null;
  title: string;
  status: string;
  chunkCount: number;
}

/** Everything the compiler needs: the draft and its parts, read in one snapshot. */
export interface DraftBundle {
  agent: AgentRecord;
  skills: { id: string; name: string; type: string; description: string | null; config: Record<string, any> }[];
  playbooks: {
    id: string;
    name: string;
    description: string | null;
    graph: PlaybookGraph;
    /** Absent or null: none (docs/api-notes.md "Agents": playbooks). */
    whenToUse?: string | null;
    triggerPhrases?: string[];
    requiresVerifiedCaller?: boolean;
  }[];
  knowledge: KnowledgeSourceSummary[];
  /**
   * The organization's variables (secrets without their values) that `{{vars.<name>}}` references resolve
   * against; absent = none (docs/api-notes.md "Variables, escalation, onboarding, meta and settings").
   */
  orgVariables?: OrgVariableRef[];
  /** Ids of the organization's escalation destinations (`transfer_call` targets); absent = not checked. */
  escalationDestinationIds?: ReadonlySet<string>;
  /**
   * The deployment's chat models (config.ts `llmModelSettings`): `default` (LLM_MODEL) and the allowlist
   * `allowed` (LLM_MODELS) that `model` and `fallbackModel` must be in; absent = not checked.
   */
  models?: { default: string; allowed: readonly string[] };
}
