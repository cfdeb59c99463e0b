/**
 * Pre-publish report of the current draft (spec "Agent versions"): what the agent will say and will not
 * say, what data leaves the system (which skills send which fields, and where), active guardrails,
 * knowledge coverage (sources by status, chunk counts) and warnings. Built from the same compilation a
 * publish runs, so `blockingErrors` are exactly the errors a publish would answer.
 */
import type { DraftBundle } from './types';
import type { DataFlow, PrepublishReport } from '../../schemas/types/agents';
import { activeGuardrails, compileDraft } from './compile';
import { gatheredVariables } from './playbookGraph';
import { skillType } from './skillTypes';

/** Builds the report of a draft. Pure; `bundle` comes from loadDraftBundle. */
export function buildPrepublishReport(bundle: DraftBundle): PrepublishReport {
  const { snapshot, errors, warnings } = compileDraft(bundle);
  const cv = snapshot.callerVerification;
  const willSay: string[] = [];
  if (snapshot.greeting) willSay.push(`Greets callers with: "${snapshot.greeting}"`);
  if (snapshot.voicemailMessage) willSay.push(`Leaves on answering machines (campaign calls): "${snapshot.voicemailMessage}"`);
  if (snapshot.persona) willSay.push(`Speaks as: ${snapshot.persona}`);
  willSay.push(`Speaks ${snapshot.language}${snapshot.voice ? ` with the voice ${snapshot.voice.name} (${snapshot.voice.id})` : ''}`);
  const ready = snapshot.knowledge;
  if (ready.length) {
    willSay.push(`Answers from ${ready.length} knowledge source(s): ${ready.map((k) => k.title).join(', ')}`);
  } else {
    willSay.push('Has no ready knowledge sources; answers only from its instructions');
  }
  for (const p of snapshot.playbooks) {
    const vars = gatheredVariables(p.graph);
    willSay.push(`Runs playbook ${p.name}${p.description ? ` (${p.description})` : ''}${vars.length ? `, asking for ${vars.join(', ')}` : ''}`);
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
  for (const t of g.blockedTopics) willNotSay.push(`Will not discuss: ${t}`);
  for (const p of g.forbiddenPhrases) willNotSay.push(`Will not say: "${p}"`);
  if (g.redactPii) willNotSay.push('Will not repeat card numbers, SSNs or similar personal data (redacted)');
  if (g.profanityFilter) willNotSay.push('Will not use profanity');
  if (cv.enabled && cv.requiredForSkills.length) {
    willNotSay.push(`Will not run ${cv.requiredForSkills.join(', ')} before verifying the caller (${cv.method ?? 'no method'})`);
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
      requiresVerifiedCaller: cv.enabled && cv.requiredForSkills.includes(s.name),
    });
  }

  const sourcesByStatus: Record<string, number> = { pending: 0, processing: 0, ready: 0, failed: 0 };
  for (const k of bundle.knowledge) sourcesByStatus[k.status] = (sourcesByStatus[k.status] ?? 0) + 1;
  const chunkCount = bundle.knowledge.filter((k) => k.status === 'ready').reduce((n, k) => n + k.chunkCount, 0);

  const allWarnings = [...warnings];
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
    activeGuardrails: activeGuardrails(g),
    knowledgeCoverage: { sourcesByStatus, totalSources: bundle.knowledge.length, chunkCount },
    blockingErrors: errors,
    warnings: allWarnings,
  };
}
