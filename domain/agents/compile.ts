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
import type {
  Agent,
  AgentVariable,
  CallerVerification,
  DtmfSettings,
  Guardrails,
  PlaybookGraph,
  ReportWarning,
  WidgetSettings,
  AnalysisSettings,
} from '../../schemas/types/agents';
import type { FieldError } from '../errors';
import { validatePlaybookGraph } from './playbookGraph';
import { skillConfigErrors, skillType } from './skillTypes';
import { defaultVoiceFor, findVoice, isSupportedLanguage } from './voices';
import { resolveReferences, type CompiledVariableRef, type OrgVariableRef } from '../settings/variables';

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

/** Caller verification before the first PUT: off. */
export const DEFAULT_CALLER_VERIFICATION: CallerVerification = { enabled: false, method: null, requiredForSkills: [], maxAttempts: 3 };

/** Widget settings before the first PUT (README "Widget"). */
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
  if (g.blockedTopics.length) out.push({ name: 'blockedTopics', description: `Declines to discuss: ${g.blockedTopics.join(', ')}` });
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
  playbooks: { name: string; description: string | null; graph: PlaybookGraph }[];
  guardrails: Guardrails;
  callerVerification: CallerVerification;
  /** Knowledge sources that are ready (indexed) at compile time. */
  knowledge: { id: string; title: string; kind: string | null; chunkCount: number }[];
  /** Widget settings (absent in versions published before widgets existed: the defaults apply). */
  widget?: WidgetSettings;
  /** Extraction fields of the post-conversation analysis (absent in versions published before analysis existed: none). */
  analysis?: AnalysisSettings;
  /**
   * What campaign calls leave on an answering machine (README "Voicemail"), organization variables in
   * place; null or absent (versions published before voicemail messages existed): none.
   */
  voicemailMessage?: string | null;
  /**
   * Organization variables the version refers to (absent when none): a non-secret one with the value
   * published (already put in place of its references), a secret one by id only — its value is never
   * copied into a version; the skill executor fills it in when the skill runs.
   */
  orgVariables?: CompiledVariableRef[];
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

  // Organization variables (README "Variables, escalation, onboarding, meta and settings").
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

  const playbooks = [...bundle.playbooks].sort(byName).map((p) => ({ ...p, graph: resolve(p.graph, `playbooks[${p.name}].graph`, false) }));
  for (const p of playbooks) {
    errors.push(...validatePlaybookGraph(p.graph, { skills: skillMap, initialVariables: seenVars }, `playbooks[${p.name}].graph`));
  }

  const guardrails = effectiveGuardrails(agent.guardrails);
  const callerVerification = effectiveCallerVerification(agent.callerVerification);
  if (callerVerification.enabled && !callerVerification.method) {
    errors.push({ field: 'callerVerification.method', message: 'is required when caller verification is enabled' });
  }
  for (const name of callerVerification.requiredForSkills) {
    if (!skillMap.has(name)) errors.push({ field: `callerVerification.requiredForSkills[${name}]`, message: `names no skill of this agent: "${name}"` });
  }

  if (callerVerification.enabled && (callerVerification.method === 'dob_and_zip' || callerVerification.method === 'sms_otp')) {
    warnings.push({
      code: 'caller_verification_unsupported',
      field: 'callerVerification.method',
      message: `Method ${callerVerification.method} is not run by this deployment (README "Caller verification"): callers stay unverified`,
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

  const snapshot: CompiledAgent = {
    schemaVersion: 1,
    name: agent.name,
    description: agent.description,
    persona,
    instructions,
    greeting,
    voicemailMessage,
    language: agent.language,
    voice,
    dtmf: effectiveDtmf(agent.dtmf),
    variables: agent.variables,
    skills: skills.map((s) => ({ name: s.name, type: s.type, description: s.description, config: s.config })),
    playbooks: playbooks.map((p) => ({ name: p.name, description: p.description, graph: p.graph })),
    guardrails,
    callerVerification,
    widget: effectiveWidget(agent.widget),
    analysis: { fields: agent.analysis?.fields ?? [] },
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
