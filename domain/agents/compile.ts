/**
 * Publish compilation (spec "Agent lifecycle": the draft is compiled into a frozen version). Pure
 * functions, testable without Temporal or a database and called by the publish activity
 * (activities/agents.ts), the diff and the pre-publish report:
 * - `compileDraft` resolves the draft (persona, voice, DTMF, variables, skills, playbooks, guardrails,
 *   caller verification, knowledge) into one snapshot and validates it; errors name fields and nodes;
 * - `canonicalJson`/`snapshotChecksum` give the snapshot one byte form.
 */
import crypto from 'node:crypto';
import type { DraftBundle, KnowledgeSourceSummary } from './types';
import type { Agent, AgentVariable, DtmfSettings, WidgetSettings, AnalysisSettings, OutboundFirstMessageMode } from '../../schemas/types/agents';
import type { CallerVerification, Guardrails } from '../../schemas/types/guardrails';
import type { PlaybookGraph } from '../../schemas/types/playbooks';
import type { ReportWarning } from '../../schemas/types/prepublish';
import type { FieldError } from '../errors';
import { validatePlaybookGraph } from './playbookGraph';
import { skillConfigErrors, skillType } from './skillTypes';
import { defaultVoiceFor, findVoice, isSupportedLanguage } from './voices';
import { resolveReferences, type CompiledVariableRef, type OrgVariableRef } from '../settings/variables';
import { isTimeZone } from '../settings/hours';
import { topicRules } from '../conversations/guardrails';
import { conversationLimits } from '../conversations/limits';

/** DTMF settings when the agent names none. */
export const DEFAULT_DTMF: Required<DtmfSettings> = { enabled: false, interDigitTimeoutMs: 3000, terminator: '#', maxDigits: 16 };

/** Guardrails before the first PUT: PII redaction and profanity filter on, nothing else. */
export const DEFAULT_GUARDRAILS: Guardrails = {
  blockedTopics: [],
  forbiddenPhrases: [],
  redactPii: true,
  profanityFilter: true,
  escalateOn: [],
  maxConversationMinutes: null,
};

/**
 * Caller verification before the first PUT: off; when turned on, only protected actions ask for it. Agents
 * stored before `required` existed carry `required: always` (migration 20261126000700_playbook_intents).
 */
export const DEFAULT_CALLER_VERIFICATION: CallerVerification = { enabled: false, method: null, requiredForSkills: [], maxAttempts: 3, required: 'for_protected_actions' };

/** Widget settings before the first PUT (docs/api-notes.md "Widget"). */
export const DEFAULT_WIDGET: WidgetSettings = {
  enabled: true,
  title: 'Chat with us',
  greeting: null,
  primaryColor: '#1f4fd1',
  textColor: '#ffffff',
  position: 'bottom-right',
  launcherText: 'Chat',
};

/** Stored widget settings with defaults for missing members. */
export function effectiveWidget(stored: Partial<WidgetSettings> | null | undefined): WidgetSettings {
  return { ...DEFAULT_WIDGET, ...(stored ?? {}) };
}

/** Stored guardrails with defaults for missing members. */
export function effectiveGuardrails(stored: Partial<Guardrails> | null | undefined): Guardrails {
  return { ...DEFAULT_GUARDRAILS, ...(stored ?? {}) };
}

/** Stored caller verification with defaults for missing members. */
export function effectiveCallerVerification(stored: Partial<CallerVerification> | null | undefined): CallerVerification {
  return { ...DEFAULT_CALLER_VERIFICATION, ...(stored ?? {}) };
}

/** DTMF settings with defaults for missing members. */
export function effectiveDtmf(stored: Partial<DtmfSettings> | null | undefined): Required<DtmfSettings> {
  return { ...DEFAULT_DTMF, ...(stored ?? {}) } as Required<DtmfSettings>;
}

/** Active guardrails with a one-line description each (agent attachments, pre-publish report). */
export function activeGuardrails(g: Guardrails): { name: string; description: string }[] {
  const out: { name: string; description: string }[] = [];
  if (g.blockedTopics.length) {
    const topics = topicRules(g).map((t) => `${t.topic} (${t.match === 'semantic' ? 'judged by the model' : 'by phrase'})`);
    out.push({ name: 'blockedTopics', description: `Declines to discuss: ${topics.join(', ')}` });
  }
  if (g.forbiddenPhrases.length) out.push({ name: 'forbiddenPhrases', description: `Never says ${g.forbiddenPhrases.length} listed phrase(s)` });
  if (g.redactPii) out.push({ name: 'redactPii', description: 'Masks card numbers, SSNs and similar personal data in transcripts and tool arguments' });
  if (g.profanityFilter) out.push({ name: 'profanityFilter', description: 'Replaces profanity in replies' });
  if (g.escalateOn.length) out.push({ name: 'escalateOn', description: `Hands off to a person on: ${g.escalateOn.join(', ')}` });
  if (g.maxConversationMinutes !== null) out.push({ name: 'maxConversationMinutes', description: `Ends conversations after ${g.maxConversationMinutes} minutes` });
  return out;
}

/** The frozen, compiled configuration of an agent: what a version stores and live traffic runs. */
export interface CompiledAgent extends Pick<Agent, 'name' | 'description' | 'persona' | 'instructions' | 'greeting' | 'language'> {
  schemaVersion: 1;
  /** Resolved voice (the language's default when the draft names none). */
  voice: { id: string; name: string; provider: string } | null;
  dtmf: Required<DtmfSettings>;
  variables: AgentVariable[];
  skills: { name: string; type: string; description: string | null; config: Record<string, unknown> }[];
  /**
   * Playbooks by name. `whenToUse`, `triggerPhrases` and `requiresVerifiedCaller` are present only when set (so
   * versions published before they existed compare equal in the diff).
   */
  playbooks: CompiledPlaybook[];
  guardrails: Guardrails;
  callerVerification: CallerVerification;
  /** Knowledge sources that are ready (indexed) at compile time. */
  knowledge: { id: string; title: string; kind: string | null; chunkCount: number }[];
  /** Widget settings (absent in versions published before widgets existed: the defaults apply). */
  widget?: WidgetSettings;
  /** Extraction fields of the post-conversation analysis (absent in versions published before analysis existed: none). */
  analysis?: AnalysisSettings;
  /**
   * Model settings (docs/api-notes.md "Agents": model settings), each present only when the draft set it (so versions
   * published before they existed compare equal): the chat model (absent: the deployment's LLM_MODEL), the
   * temperature (absent: the model's default), the most tokens of an answer (absent: the model's limit), the model
   * asked once when the first answers 429/5xx or times out (absent: none), and the IANA time zone of the date and
   * time the prompt carries (absent: the organization's, UTC).
   */
  model?: string;
  temperature?: number;
  maxTokens?: number;
  fallbackModel?: string;
  timeZone?: string;
  /**
   * What campaign calls leave on an answering machine (docs/voice.md "Voicemail"), organization variables in
   * place; null or absent (versions published before voicemail messages existed): none.
   */
  voicemailMessage?: string | null;
  /**
   * The first line of outbound calls, organization variables in place, and who opens them (docs/voice.md "Outbound
   * first line"); absent in versions published before they existed: the greeting, the agent first.
   */
  outboundGreeting?: string | null;
  outboundFirstMessageMode?: OutboundFirstMessageMode;
  /**
   * Idle timeouts and the SMS reply length (domain/conversations/limits.ts; docs/api-notes.md "Conversations"): absent
   * in versions published before they existed, which run on the defaults (`conversationLimits`).
   */
  idleTimeoutSeconds?: number;
  smsIdleTimeoutSeconds?: number;
  smsMaxSegments?: number;
  /**
   * Organization variables the version refers to (absent when none): a non-secret one with the value
   * published (already put in place of its references), a secret one by id only — its value is never
   * copied into a version; the skill executor fills it in when the skill runs.
   */
  orgVariables?: CompiledVariableRef[];
}

/** A playbook as a version stores it (docs/api-notes.md "Agents": playbooks). */
export interface CompiledPlaybook {
  name: string;
  description: string | null;
  graph: PlaybookGraph;
  /** When the model should start it; absent: not set. */
  whenToUse?: string;
  /** Phrases that start it; absent: none. */
  triggerPhrases?: string[];
  /** Present (true) when it runs only for a verified caller. */
  requiresVerifiedCaller?: true;
}

/** Result of compiling a draft. `errors` non-empty means the draft cannot be published. */
export interface CompileResult {
  snapshot: CompiledAgent;
  errors: FieldError[];
  warnings: ReportWarning[];
}

const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * Resolves and validates a draft.
 * @param bundle the draft with its skills, playbooks and knowledge (db/repositories/agents.ts)
 * @returns the snapshot (always built, so the diff and the report work on invalid drafts), field errors
 *   such as `playbooks[intake].graph.nodes[ask_name].gathers` or `skills[book].config.url`, and warnings
 */
export function compileDraft(bundle: DraftBundle): CompileResult {
  const { agent } = bundle;
  const errors: FieldError[] = [];
  const warnings: ReportWarning[] = [];

  if (!isSupportedLanguage(agent.language)) {
    errors.push({ field: 'language', message: `"${agent.language}" is not supported by the plan's speech engine` });
  }

  let voice: CompiledAgent['voice'] = null;
  if (agent.voiceId) {
    const v = findVoice(agent.voiceId);
    if (!v) errors.push({ field: 'voiceId', message: `"${agent.voiceId}" is not a voice of the catalogue` });
    else {
      if (!v.languages.includes(agent.language)) errors.push({ field: 'voiceId', message: `voice "${v.id}" does not speak ${agent.language}` });
      voice = { id: v.id, name: v.name, provider: v.provider };
    }
  } else {
    const v = defaultVoiceFor(agent.language);
    if (v) {
      voice = { id: v.id, name: v.name, provider: v.provider };
      warnings.push({ code: 'default_voice', field: 'voiceId', message: `No voice chosen; the ${agent.language} default "${v.id}" is used` });
    } else {
      errors.push({ field: 'voiceId', message: `no voice of the catalogue speaks ${agent.language}; choose one with PUT /agents/{id}/voice` });
    }
  }

  const seenVars = new Set<string>();
  for (const variable of agent.variables) {
    if (seenVars.has(variable.name)) errors.push({ field: `variables[${variable.name}]`, message: 'duplicate variable name' });
    seenVars.add(variable.name);
  }

  // Organization variables (docs/api-notes.md "Variables, escalation, onboarding, meta and settings").
  const orgVars = new Map((bundle.orgVariables ?? []).map((v) => [v.name, v]));
  const usedVars = new Map<string, OrgVariableRef>();
  const resolve = <T>(value: T, field: string, allowSecrets: boolean): T => {
    const r = resolveReferences(value, orgVars, field, allowSecrets);
    errors.push(...r.errors);
    for (const [k, v] of r.used) usedVars.set(k, v);
    return r.value;
  };
  const persona = resolve(agent.persona, 'persona', false);
  const instructions = resolve(agent.instructions, 'instructions', false);
  const greeting = resolve(agent.greeting, 'greeting', false);
  const voicemailMessage = resolve(agent.voicemailMessage ?? null, 'voicemailMessage', false);
  const outboundGreeting = resolve(agent.outboundGreeting ?? null, 'outboundGreeting', false);

  const skills = [...bundle.skills].sort(byName).map((s) => ({ ...s, config: resolve(s.config, `skills[${s.name}].config`, true) }));
  for (const s of skills) {
    if (!skillType(s.type)) errors.push({ field: `skills[${s.name}].type`, message: `"${s.type}" is not a skill type` });
    else errors.push(...skillConfigErrors(s.type, s.config, `skills[${s.name}].config`));
    const dest = s.type === 'transfer_call' ? s.config.destinationId : undefined;
    if (typeof dest === 'string' && bundle.escalationDestinationIds && !bundle.escalationDestinationIds.has(dest)) {
      errors.push({ field: `skills[${s.name}].config.destinationId`, message: `"${dest}" is not an escalation destination of this organization` });
    }
  }
  const skillMap = new Map(skills.map((s) => [s.name, { type: s.type, config: s.config }]));

  const playbooks = [...bundle.playbooks].sort(byName).map((p) => ({
    ...p,
    graph: resolve(p.graph, `playbooks[${p.name}].graph`, false),
    whenToUse: resolve(p.whenToUse ?? null, `playbooks[${p.name}].whenToUse`, false),
  }));
  for (const p of playbooks) {
    errors.push(...validatePlaybookGraph(p.graph, { skills: skillMap, initialVariables: seenVars }, `playbooks[${p.name}].graph`));
    // A skill node without an error path gets the default one at run time (domain/conversations/playbook.ts).
    for (const n of p.graph.nodes) {
      if (n.type !== 'skill' || p.graph.edges.some((e) => e.from === n.id && e.onError)) continue;
      warnings.push({
        code: 'playbook_skill_without_error_path',
        field: `playbooks[${p.name}].graph.nodes[${n.id}]`,
        message: `Skill node "${n.id}" has no onError edge: when its skill fails the agent apologises and offers a member of the team`,
      });
    }
  }

  const guardrails = effectiveGuardrails(agent.guardrails);
  const callerVerification = effectiveCallerVerification(agent.callerVerification);
  if (callerVerification.enabled && !callerVerification.method) {
    errors.push({ field: 'callerVerification.method', message: 'is required when caller verification is enabled' });
  }
  for (const name of callerVerification.requiredForSkills) {
    if (!skillMap.has(name)) errors.push({ field: `callerVerification.requiredForSkills[${name}]`, message: `names no skill of this agent: "${name}"` });
  }
  for (const p of playbooks) {
    if (p.requiresVerifiedCaller && !callerVerification.enabled) {
      warnings.push({
        code: 'protected_playbook_without_verification',
        field: `playbooks[${p.name}].requiresVerifiedCaller`,
        message: `Playbook ${p.name} requires a verified caller but caller verification is off: it runs for every caller`,
      });
    }
  }

  if (callerVerification.enabled && (callerVerification.method === 'dob_and_zip' || callerVerification.method === 'sms_otp')) {
    warnings.push({
      code: 'caller_verification_unsupported',
      field: 'callerVerification.method',
      message: `Method ${callerVerification.method} is not run by this deployment (docs/api-notes.md "Caller verification"): callers stay unverified`,
    });
  }
  if (callerVerification.enabled && callerVerification.method === 'pin' && !effectiveDtmf(agent.dtmf).enabled) {
    warnings.push({ code: 'pin_without_keypad', field: 'dtmf.enabled', message: 'Caller verification asks for a PIN but keypad input is off: callers can only say the digits' });
  }
  if (!agent.greeting) warnings.push({ code: 'no_greeting', field: 'greeting', message: 'No greeting: the agent waits for the caller to speak first' });
  if (!agent.instructions && !agent.persona) {
    warnings.push({ code: 'no_instructions', field: 'instructions', message: 'Neither persona nor instructions are set; the agent has only its defaults to go on' });
  }
  const sends = skills.filter((s) => skillType(s.type)?.sendsData);
  if (sends.length && !callerVerification.enabled) {
    warnings.push({
      code: 'unverified_data_flow',
      field: 'callerVerification',
      message: `${sends.length} skill(s) send data outside the system and caller verification is off`,
    });
  }
  const notReady = bundle.knowledge.filter((k) => k.status !== 'ready');
  for (const k of notReady) {
    warnings.push({ code: `knowledge_${k.status}`, field: `knowledge[${k.id}]`, message: `Knowledge source "${k.title}" is ${k.status} and is left out of this version` });
  }

  const modelChecks = modelSettingProblems(agent, bundle.models, guardrails);
  errors.push(...modelChecks.errors);
  warnings.push(...modelChecks.warnings);

  const snapshot: CompiledAgent = {
    schemaVersion: 1,
    name: agent.name,
    description: agent.description,
    persona,
    instructions,
    greeting,
    voicemailMessage,
    outboundGreeting,
    outboundFirstMessageMode: agent.outboundFirstMessageMode ?? 'agent_speaks_first',
    language: agent.language,
    voice,
    dtmf: effectiveDtmf(agent.dtmf),
    variables: agent.variables,
    skills: skills.map((s) => ({ name: s.name, type: s.type, description: s.description, config: s.config })),
    playbooks: playbooks.map(compiledPlaybook),
    guardrails,
    callerVerification,
    widget: effectiveWidget(agent.widget),
    analysis: { fields: agent.analysis?.fields ?? [] },
    ...compiledModelSettings(agent),
    ...conversationLimits(agent),
    knowledge: bundle.knowledge
      .filter((k: KnowledgeSourceSummary) => k.status === 'ready')
      .map((k) => ({ id: k.id, title: k.title, kind: k.kind, chunkCount: k.chunkCount })),
  };
  if (usedVars.size) {
    snapshot.orgVariables = [...usedVars.values()]
      .sort(byName)
      .map((v) => (v.secret ? { name: v.name, id: v.id, secret: true } : { name: v.name, id: v.id, secret: false, value: v.value ?? '' }));
  }
  return { snapshot, errors, warnings };
}

/** The model settings as a version stores them: each only when set (CompiledAgent `model` …). */
function compiledModelSettings(agent: DraftBundle['agent']): Pick<CompiledAgent, 'model' | 'temperature' | 'maxTokens' | 'fallbackModel' | 'timeZone'> {
  const out: Pick<CompiledAgent, 'model' | 'temperature' | 'maxTokens' | 'fallbackModel' | 'timeZone'> = {};
  if (agent.model) out.model = agent.model;
  if (agent.temperature !== null && agent.temperature !== undefined) out.temperature = agent.temperature;
  if (agent.maxTokens !== null && agent.maxTokens !== undefined) out.maxTokens = agent.maxTokens;
  if (agent.fallbackModel) out.fallbackModel = agent.fallbackModel;
  if (agent.timeZone) out.timeZone = agent.timeZone;
  return out;
}

/**
 * Problems of the model settings and of semantic guardrails (docs/api-notes.md "Agents": model settings): a `model` or
 * `fallbackModel` outside the deployment's LLM_MODELS (when `models` is known) or an unknown `timeZone` is an
 * error naming the field, since the API refuses them at save and the allowlist may have changed since; a fallback
 * equal to the model and a semantic topic without description are warnings.
 */
export function modelSettingProblems(
  agent: Partial<Pick<Agent, 'model' | 'fallbackModel' | 'timeZone'>>,
  models: DraftBundle['models'],
  guardrails?: Guardrails,
): { errors: FieldError[]; warnings: ReportWarning[] } {
  const errors: FieldError[] = [];
  const warnings: ReportWarning[] = [];
  const allowed = models ? new Set(models.allowed) : undefined;
  for (const field of ['model', 'fallbackModel'] as const) {
    const value = agent[field];
    if (value && allowed && !allowed.has(value)) {
      errors.push({ field, message: `"${value}" is not a model of this deployment (LLM_MODELS: ${[...allowed].join(', ')})` });
    }
  }
  if (agent.timeZone && !isTimeZone(agent.timeZone)) errors.push({ field: 'timeZone', message: 'must be an IANA time zone, e.g. America/Chicago' });
  const effectiveModel = agent.model || models?.default;
  if (agent.fallbackModel && effectiveModel && agent.fallbackModel === effectiveModel) {
    warnings.push({ code: 'fallback_same_as_model', field: 'fallbackModel', message: `The fallback model is the model itself (${effectiveModel}): a failure is only retried on it once` });
  }
  for (const t of guardrails ? topicRules(guardrails) : []) {
    if (t.match === 'semantic' && !t.description) {
      warnings.push({
        code: 'semantic_topic_without_description',
        field: `guardrails.blockedTopics[${t.topic}]`,
        message: `Semantic topic "${t.topic}" has no description: the model judges it by its name alone`,
      });
    }
  }
  return { errors, warnings };
}

/** A draft playbook as a version stores it: the start settings only when set (CompiledPlaybook). */
function compiledPlaybook(p: DraftBundle['playbooks'][number]): CompiledPlaybook {
  const out: CompiledPlaybook = { name: p.name, description: p.description, graph: p.graph };
  if (p.whenToUse) out.whenToUse = p.whenToUse;
  if (p.triggerPhrases?.length) out.triggerPhrases = p.triggerPhrases;
  if (p.requiresVerifiedCaller) out.requiresVerifiedCaller = true;
  return out;
}

/** JSON with object keys sorted at every level (arrays keep their order): one byte form per value. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value as object)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
}

/** SHA-256 hex of the canonical JSON of a snapshot. */
export function snapshotChecksum(snapshot: CompiledAgent): string {
  return crypto.createHash('sha256').update(canonicalJson(snapshot)).digest('hex');
}

/** Hash of a publish request body, stored with the Idempotency-Key (same key + other body is refused). */
export function publishRequestHash(body: { note?: string | null }): string {
  return crypto.createHash('sha256').update(canonicalJson({ note: body.note ?? null })).digest('hex');
}
