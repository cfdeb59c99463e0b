/**
 * Pre-publish report of the current draft (spec "Agent versions"): what the agent will say and will not
 * say, what data leaves the system (which skills send which fields, and where), active guardrails,
 * knowledge coverage (sources by status, chunk counts) and warnings. Built from the same compilation a
 * publish runs, so `blockingErrors` are exactly the errors a publish would answer.
 */
import type { DraftBundle } from './types';
import type { Guardrails } from '../../schemas/types/guardrails';
import type { DataFlow, PlaybookStart, PrepublishReport, ProtectedAction, ReportBlockedTopic, ReportModelSettings } from '../../schemas/types/prepublish';
import { topicRules } from '../conversations/guardrails';
import { DEFAULT_TIME_ZONE } from '../conversations/prompt';
import { activeGuardrails, compileDraft, type CompiledAgent } from './compile';
import { gatheredVariables } from './playbookGraph';
import { skillType } from './skillTypes';
import { modelVisibility, pinFieldWarnings } from './modelVisibility';
import type { RecordRules } from '../records/sensitive';
import { protectedPlaybook, protectedSkill, verificationRequired } from '../conversations/callerVerification';
import { playbookLabel, playbookToolName } from '../conversations/playbook';
import { reachReport, type ReachFacts } from './reachReport';
import { mcpReport } from './mcpReport';
import type { ReportMcpServer } from '../../schemas/types/prepublish';
import { bookingReport, type BookingProbe } from './bookingReport';

/** No numbers and no escalation destinations (a report built without reading them). */
const NO_REACH_FACTS: ReachFacts = { numbers: [], destinations: [], carrier: 'twilio' };

/**
 * How each playbook starts (docs/api-notes.md "Agents": playbooks): by its name in a message, by its trigger phrases, and
 * by the model calling its tool when the person wants what `whenToUse` says.
 */
export function playbookStarts(snapshot: CompiledAgent): PlaybookStart[] {
  const cv = snapshot.callerVerification;
  return snapshot.playbooks.map((p) => {
    const phrases = p.triggerPhrases ?? [];
    const ways = [`the person names it ("${playbookLabel(p.name)}")`];
    if (phrases.length) ways.push(`says ${phrases.map((x) => `"${x}"`).join(' or ')}`);
    ways.push(p.whenToUse ? `the model judges that ${clause(p.whenToUse)}` : 'the model calls its tool (no whenToUse: it has only the name and description to go on)');
    const isProtected = !!protectedPlaybook(cv, p, snapshot.skills);
    return {
      name: p.name,
      description: p.description,
      tool: playbookToolName(p.name),
      whenToUse: p.whenToUse ?? null,
      triggerPhrases: phrases,
      startsWhen: `Starts when ${ways.join(', or ')}${isProtected ? '; only for a verified caller' : ''}.`,
      asks: gatheredVariables(p.graph),
      requiresVerifiedCaller: isProtected,
    };
  });
}

/**
 * A `whenToUse` sentence as a clause after "that": trailing stops dropped, and a capital that only opened the sentence
 * lowered ("The caller asks…" → "the caller asks…"; "I", acronyms such as "SMS" and words with inner capitals kept).
 */
export function clause(sentence: string): string {
  const s = sentence.trim().replace(/[.\s]+$/, '');
  const first = /^[\p{L}'’-]+/u.exec(s)?.[0] ?? '';
  return first !== 'I' && /^\p{Lu}[\p{Ll}'’-]*$/u.test(first) ? s[0].toLowerCase() + s.slice(1) : s;
}

/** Every blocked topic with its match mode and description (docs/api-notes.md "Agents": guardrails). */
export function blockedTopicsReport(g: Guardrails): ReportBlockedTopic[] {
  return topicRules(g).map((t) => ({ topic: t.topic, match: t.match, description: t.description }));
}

/**
 * The model settings a version runs with (docs/api-notes.md "Agents": model settings): the snapshot's, else the
 * deployment's defaults (`models.default` = LLM_MODEL; `LLM_MODEL` itself when unknown), and the model calls a turn
 * makes besides the answer (one classification when a semantic topic is set).
 */
export function modelSettingsReport(snapshot: CompiledAgent, models?: DraftBundle['models']): ReportModelSettings {
  return {
    model: snapshot.model ?? models?.default ?? 'LLM_MODEL',
    modelSource: snapshot.model ? 'agent' : 'default',
    fallbackModel: snapshot.fallbackModel ?? null,
    temperature: snapshot.temperature ?? null,
    maxTokens: snapshot.maxTokens ?? null,
    timeZone: snapshot.timeZone ?? DEFAULT_TIME_ZONE,
    timeZoneSource: snapshot.timeZone ? 'agent' : 'default',
    classificationCallsPerTurn: topicRules(snapshot.guardrails).some((t) => t.match === 'semantic') ? 1 : 0,
  };
}

/** What runs only for a verified caller (docs/api-notes.md "Caller verification"); empty when verification is off. */
export function protectedActions(snapshot: CompiledAgent): ProtectedAction[] {
  const cv = snapshot.callerVerification;
  const out: ProtectedAction[] = [];
  for (const s of snapshot.skills) {
    const reason = protectedSkill(cv, s);
    if (reason) out.push({ kind: s.type === 'lookup_record' ? 'record_lookup' : 'skill', name: s.name, reason });
  }
  for (const p of snapshot.playbooks) {
    const reason = protectedPlaybook(cv, p, snapshot.skills);
    if (reason) out.push({ kind: 'playbook', name: p.name, reason });
  }
  return out;
}

/**
 * Builds the report of a draft. Pure; `bundle` comes from loadDraftBundle, `rules` are the organization's
 * record rules (db/repositories/records.ts `recordSchemaRules`; none: only the by-name defaults apply), `reachFacts`
 * the agent's numbers with their phone settings and the organization's escalation destinations (./reachReport.ts),
 * `mcpServers` the `mcp` skills' servers as probed now (services/conversations/mcp.ts; none given: `not_checked`).
 */
export function buildPrepublishReport(bundle: DraftBundle, rules: RecordRules = new Map(), reachFacts: ReachFacts = NO_REACH_FACTS, mcpServers: readonly ReportMcpServer[] = [], bookingProbes: readonly BookingProbe[] = []): PrepublishReport {
  const { snapshot, errors, warnings } = compileDraft(bundle);
  const cv = snapshot.callerVerification;
  const willSay: string[] = [];
  if (snapshot.greeting) willSay.push(`Greets callers with: "${snapshot.greeting}"`);
  if (snapshot.outboundFirstMessageMode === 'wait_for_callee') willSay.push('Opens outbound calls (campaigns, POST /calls) by waiting for the callee to speak first');
  else if (snapshot.outboundGreeting) willSay.push(`Opens outbound calls (campaigns, POST /calls) with: "${snapshot.outboundGreeting}"`);
  if (snapshot.voicemailMessage) willSay.push(`Leaves on answering machines (campaign calls): "${snapshot.voicemailMessage}"`);
  if (snapshot.persona) willSay.push(`Speaks as: ${snapshot.persona}`);
  willSay.push(`Speaks ${snapshot.language}${snapshot.voice ? ` with the voice ${snapshot.voice.name} (${snapshot.voice.id})` : ''}`);
  const ready = snapshot.knowledge;
  if (ready.length) {
    willSay.push(`Answers from ${ready.length} knowledge source(s): ${ready.map((k) => k.title).join(', ')}`);
  } else {
    willSay.push('Has no ready knowledge sources; answers only from its instructions');
  }
  const starts = playbookStarts(snapshot);
  for (const p of starts) {
    willSay.push(`Runs playbook ${p.name}${p.description ? ` (${p.description})` : ''}${p.asks.length ? `, asking for ${p.asks.join(', ')}` : ''}. ${p.startsWhen}`);
  }
  for (const s of snapshot.skills) {
    const def = skillType(s.type);
    willSay.push(`Offers ${s.name} (${def?.name ?? s.type})${s.description ? `: ${s.description}` : ''}`);
  }
  if (snapshot.dtmf.enabled) willSay.push('Accepts keypad (DTMF) input on calls');
  if (cv.enabled && (cv.method === 'caller_id' || cv.method === 'pin')) {
    willSay.push(`Looks callers up in Records by their number or email${cv.method === 'pin' ? ` and asks for their PIN (field "${cv.pinField ?? 'pin'}", ${cv.maxAttempts} attempts)` : ''}`);
  }

  const g = snapshot.guardrails;
  const willNotSay: string[] = [];
  for (const t of blockedTopicsReport(g)) {
    willNotSay.push(`Will not discuss: ${t.topic}${t.match === 'semantic' ? ` (the model judges every message${t.description ? `: ${t.description}` : ''})` : ''}`);
  }
  const modelSettings = modelSettingsReport(snapshot, bundle.models);
  willSay.push(
    `Answers with the model ${modelSettings.model}${modelSettings.modelSource === 'default' ? ' (the deployment default)' : ''}` +
      `${modelSettings.temperature !== null ? `, temperature ${modelSettings.temperature}` : ''}` +
      `${modelSettings.maxTokens !== null ? `, at most ${modelSettings.maxTokens} tokens an answer` : ''}` +
      `${modelSettings.fallbackModel ? `; falls back to ${modelSettings.fallbackModel} when it is rate-limited, down or too slow` : ''}`,
  );
  willSay.push(`Knows the current date and time in ${modelSettings.timeZone}, and the channel of each conversation`);
  for (const p of g.forbiddenPhrases) willNotSay.push(`Will not say: "${p}"`);
  if (g.redactPii) willNotSay.push('Will not repeat card numbers, SSNs or similar personal data (redacted)');
  if (g.profanityFilter) willNotSay.push('Will not use profanity');
  const guarded = protectedActions(snapshot);
  if (guarded.length) {
    willNotSay.push(`Will not run ${guarded.map((a) => a.name).join(', ')} before verifying the caller (${cv.method ?? 'no method'})`);
  }
  if (cv.enabled) {
    willSay.push(
      verificationRequired(cv) === 'always'
        ? 'Verifies every caller before answering anything'
        : `Answers everything before verification; verifies the caller only when they ask for ${guarded.length ? guarded.map((a) => a.name).join(', ') : 'a protected action (none is configured)'}`,
    );
  }

  const dataLeavingSystem: DataFlow[] = [];
  for (const s of snapshot.skills) {
    const def = skillType(s.type);
    if (!def?.sendsData) continue;
    let flow: { destination: string | null; fields: string[] };
    try {
      flow = def.dataFlow(s.config as Record<string, any>);
    } catch {
      flow = { destination: null, fields: [] };
    }
    dataLeavingSystem.push({
      skill: s.name,
      type: s.type,
      destination: flow.destination ?? '(invalid configuration)',
      fields: flow.fields,
      requiresVerifiedCaller: !!protectedSkill(cv, s),
    });
  }

  const sourcesByStatus: Record<string, number> = { pending: 0, processing: 0, ready: 0, failed: 0 };
  for (const k of bundle.knowledge) sourcesByStatus[k.status] = (sourcesByStatus[k.status] ?? 0) + 1;
  const chunkCount = bundle.knowledge.filter((k) => k.status === 'ready').reduce((n, k) => n + k.chunkCount, 0);

  // Numbers, escalation and idle timeouts (./reachReport.ts).
  const reach = reachReport(snapshot, reachFacts);
  willSay.push(...reach.willSay);
  // MCP servers as probed by the caller (./mcpReport.ts); unprobed ones are `not_checked`.
  const mcp = mcpReport(snapshot, mcpServers);
  willSay.push(...mcp.willSay);
  // Booking skills: what each really does, and a target that did not answer (./bookingReport.ts).
  const booking = bookingReport(snapshot, bookingProbes);
  willSay.push(...booking.willSay);
  const allWarnings = [...warnings, ...pinFieldWarnings(snapshot, rules), ...reach.warnings, ...mcp.warnings, ...booking.warnings];
  if (!activeGuardrails(g).length) allWarnings.push({ code: 'no_guardrails', field: 'guardrails', message: 'No guardrail is active' });
  if (bundle.agent.publishedDraftVersion !== null && bundle.agent.publishedDraftVersion === bundle.agent.version) {
    allWarnings.push({ code: 'no_changes', message: 'The draft has not changed since the published version was compiled' });
  }

  return {
    agentId: bundle.agent.id,
    draftVersion: bundle.agent.version,
    willSay,
    willNotSay,
    dataLeavingSystem,
    modelVisibility: modelVisibility(snapshot, rules),
    activeGuardrails: activeGuardrails(g),
    blockedTopics: blockedTopicsReport(g),
    modelSettings,
    playbooks: starts,
    callerVerificationRequired: cv.enabled ? verificationRequired(cv) : null,
    protectedActions: guarded,
    knowledgeCoverage: { sourcesByStatus, totalSources: bundle.knowledge.length, chunkCount },
    numbers: reach.numbers,
    escalation: reach.escalation,
    conversationLimits: reach.conversationLimits,
    mcpServers: mcp.mcpServers,
    blockingErrors: errors,
    warnings: allWarnings,
  };
}
