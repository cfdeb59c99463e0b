/**
 * The pre-publish report's facts about how people reach the agent and a person (spec "Agent versions": the
 * pre-publish report; docs/voice.md "Phone settings on calls", "Escalation", "The agent's voice on the carrier";
 * docs/api-notes.md "Conversations": escalation, idle timeouts): per number the agent answers its business hours
 * and after-hours action, the recording notice, the escalation destinations and when each is used, and the voice
 * and language the carrier gets; where chat, widget and SMS escalations go and what the person is told; the idle
 * timeouts. Pure: the numbers, their settings and the destinations are read by the caller (api/routes/agents.ts).
 */
import type { CompiledAgent } from './compile';
import type { PhoneSettings } from '../../schemas/types/settings';
import type { ReportConversationLimits, ReportEscalation, ReportEscalationDestination, ReportNumber, ReportWarning } from '../../schemas/types/prepublish';
import { DEFAULT_VOICEMAIL_GREETING, effectivePhoneSettings, recordingNotice, voicemailRouting, DEFAULT_AFTER_HOURS_MESSAGE } from '../settings/phone';
import { carrierSpeech, type SpeechCarrier } from '../voice/carrierVoices';
import { conversationLimits, durationWords } from '../conversations/limits';
import { reachLine } from '../conversations/escalation';

/** What the report reads besides the draft. */
export interface ReachFacts {
  /** The organization's numbers assigned to the agent, with their stored settings (null: never saved, the defaults). */
  numbers: { id: string; e164: string; smsEnabled: boolean; settings: Partial<PhoneSettings> | null }[];
  /** The organization's escalation destinations in creation order (the order escalations try them). */
  destinations: { id: string; name: string; kind: string; address: string }[];
  /** Whose markup the deployment's calls get (providers/telephony `TELEPHONY_PROVIDER`; the sandbox speaks Twilio's). */
  carrier: SpeechCarrier;
}

/** The report's sections built here, and what they add to `willSay` and `warnings`. */
export interface ReachReport {
  numbers: ReportNumber[];
  escalation: ReportEscalation;
  conversationLimits: ReportConversationLimits;
  willSay: string[];
  warnings: ReportWarning[];
}

const DIALABLE = new Set(['phone', 'sip']);

/** What makes the agent escalate, in words (for `usedWhen`). */
function escalationTriggers(snapshot: CompiledAgent, toolOffered: boolean): string {
  const ways: string[] = [];
  if (snapshot.guardrails.escalateOn.length) ways.push(`the person mentions ${snapshot.guardrails.escalateOn.map((x) => `"${x}"`).join(' or ')}`);
  if (toolOffered) ways.push('the model calls the escalate tool (the person asks for a person, or it is an emergency)');
  const nodes = snapshot.playbooks.filter((p) => p.graph.nodes.some((n) => n.type === 'escalate')).map((p) => p.name);
  if (nodes.length) ways.push(`a playbook reaches an escalate node (${nodes.join(', ')})`);
  if (snapshot.callerVerification.enabled) ways.push(`caller verification fails ${snapshot.callerVerification.maxAttempts} times`);
  return ways.length ? ways.join(', or ') : 'never (no escalateOn, escalate tool or escalate node)';
}

/** Adds `sentence` to the destination's `usedWhen` in `out` (in first-use order). */
function use(out: Map<string, ReportEscalationDestination>, d: ReachFacts['destinations'][number], sentence: string): void {
  const entry = out.get(d.id) ?? { destinationId: d.id, name: d.name, kind: d.kind, address: d.address, usedWhen: [] };
  if (!entry.usedWhen.includes(sentence)) entry.usedWhen.push(sentence);
  out.set(d.id, entry);
}

/** Builds the reach sections of the report from the compiled draft and the facts read for it. */
export function reachReport(snapshot: CompiledAgent, facts: ReachFacts): ReachReport {
  const limits = conversationLimits(snapshot);
  const warnings: ReportWarning[] = [];
  const willSay: string[] = [
    `Ends a chat or widget conversation after ${durationWords(limits.idleTimeoutSeconds)} without a message, and an SMS conversation after ${durationWords(limits.smsIdleTimeoutSeconds)} (ended idle, then analysed)`,
    `Keeps each SMS reply to ${limits.smsMaxSegments} segment${limits.smsMaxSegments === 1 ? '' : 's'}, cut at a sentence`,
  ];
  const byId = new Map(facts.destinations.map((d) => [d.id, d]));
  const toolOffered = facts.destinations.length > 0;
  const triggers = escalationTriggers(snapshot, toolOffered);
  const dialable = facts.destinations.filter((d) => DIALABLE.has(d.kind));

  // Escalation from a call: a transfer_call skill's destination, else the first open phone or SIP destination.
  const callUses = (out: Map<string, ReportEscalationDestination>) => {
    for (const s of snapshot.skills) {
      const id = s.type === 'transfer_call' ? (s.config as { destinationId?: unknown }).destinationId : undefined;
      const d = typeof id === 'string' ? byId.get(id) : undefined;
      if (d) use(out, d, `When the skill ${s.name} transfers the call`);
    }
    dialable.forEach((d, i) => {
      const order = i === 0 ? 'the first phone or SIP destination open then' : `open then while the ${i} before it ${i === 1 ? 'is' : 'are'} closed`;
      use(out, d, `When the agent escalates a call (${triggers}), as ${order}`);
    });
  };

  const numbers: ReportNumber[] = facts.numbers.map((n) => {
    const s = effectivePhoneSettings(n.settings);
    const bh = s.businessHours;
    const alwaysOpen = !bh.hours;
    const uses = new Map<string, ReportEscalationDestination>();
    let afterHoursAction: string;
    if (alwaysOpen || bh.afterHours === 'agent') {
      afterHoursAction = alwaysOpen ? 'Always open: the agent answers every call' : 'Outside business hours the agent answers anyway';
    } else if (bh.afterHours === 'voicemail') {
      const vm = voicemailRouting(s);
      afterHoursAction = `Outside business hours callers hear "${vm.greeting}" and leave a voicemail of up to ${vm.maxSeconds} seconds${vm.transcribe ? ' (transcribed)' : ''}`;
    } else if (bh.afterHours === 'message') {
      afterHoursAction = `Outside business hours callers hear "${bh.afterHoursMessage?.trim() || DEFAULT_AFTER_HOURS_MESSAGE}" and the call ends`;
    } else {
      const d = bh.escalationDestinationId ? byId.get(bh.escalationDestinationId) : undefined;
      if (d && DIALABLE.has(d.kind)) {
        afterHoursAction = `Outside business hours calls are transferred to ${d.name} (${d.address}); busy or unanswered, the caller leaves a voicemail`;
        use(uses, d, `Outside business hours (${bh.timeZone}), every call`);
      } else {
        afterHoursAction = `Outside business hours calls should go to an escalation destination, but ${d ? `${d.name} is not a phone number or SIP URI` : 'none is set'}: callers leave a voicemail ("${s.voicemail.greeting?.trim() || DEFAULT_VOICEMAIL_GREETING}")`;
        warnings.push({ code: 'after_hours_destination_unusable', field: `numbers[${n.e164}].businessHours.escalationDestinationId`, message: `${n.e164}: ${afterHoursAction}` });
      }
    }
    callUses(uses);
    const notice = recordingNotice(s);
    const speech = carrierSpeech(facts.carrier, snapshot.voice?.id, snapshot.language);
    const hoursText = alwaysOpen ? 'always open' : `open ${bh.hours!.map((h) => `${h.day} ${h.open}–${h.close}`).join(', ')} (${bh.timeZone})`;
    const escalation = [...uses.values()];
    const statements = [
      `${n.e164}: ${hoursText}. ${afterHoursAction}.`,
      notice
        ? `${n.e164}: calls are recorded${s.recordingConsent.mode === 'opt_in' ? ' only after the caller agrees' : ''}; callers first hear "${notice}"`
        : `${n.e164}: calls are not recorded; no recording notice is played`,
      `${n.e164}: the carrier speaks ${speech.language} with ${speech.voice ?? 'its default voice'}${speech.ttsProvider ? ` (${speech.ttsProvider})` : ''} and transcribes with ${speech.transcriptionProvider}`,
      escalation.length
        ? `${n.e164}: escalated calls go to ${escalation.map((d) => `${d.name} (${d.address})`).join(', then ')}; nobody answering, the caller leaves a voicemail`
        : `${n.e164}: no phone or SIP destination: an escalated call takes a voicemail`,
    ];
    if (n.smsEnabled) statements.push(`${n.e164}: answers texts; an escalated text conversation is told "${reachLine('sms', { destination: facts.destinations[0] ?? null, phone: null, email: null }) ?? 'nothing more (no destination)'}"`);
    return {
      numberId: n.id,
      e164: n.e164,
      smsEnabled: n.smsEnabled,
      businessHours: { timeZone: bh.timeZone, hours: bh.hours ? bh.hours.map((h) => ({ day: h.day, open: h.open, close: h.close })) : null },
      afterHours: alwaysOpen ? 'agent' : bh.afterHours,
      afterHoursAction,
      recordingNotice: notice,
      escalation,
      carrierSpeech: { carrier: facts.carrier, ...speech },
      statements,
    };
  });

  // Chat, widget and SMS: the first destination open then, else the first one.
  const textUses = new Map<string, ReportEscalationDestination>();
  facts.destinations.forEach((d, i) => {
    use(textUses, d, `When a chat, widget or SMS conversation is escalated (${triggers}), as ${i === 0 ? 'the first destination open then, or when none is open' : `the first open then while the ${i} before it ${i === 1 ? 'is' : 'are'} closed`}`);
  });
  const kinds = [...new Set(facts.destinations.map((d) => d.kind))];
  const told = (kind: string) => reachLine('chat', { destination: { id: '', kind, address: '' }, phone: '<their number>', email: null });
  const statements = facts.destinations.length
    ? [
        `In SMS the person is told: "${reachLine('sms', { destination: facts.destinations[0], phone: null, email: null })}"`,
        ...kinds.map((k) => `In chat and the widget, with ${k === 'email' ? 'an e-mail' : `a ${k}`} destination, the person is told: "${told(k)}"${k === 'phone' || k === 'sip' ? ' (without their number: a member of the team will follow up)' : ''}`),
      ]
    : ['No escalation destination: the escalate tool is not offered, and an escalation (escalateOn) names nobody to follow up'];
  if (toolOffered) willSay.push(`Hands the person to a member of the team when ${triggers}, and tells them how they will be reached`);
  const escalates = snapshot.guardrails.escalateOn.length > 0 || snapshot.playbooks.some((p) => p.graph.nodes.some((x) => x.type === 'escalate'));
  if (escalates && !facts.destinations.length) {
    warnings.push({ code: 'escalation_without_destination', field: 'guardrails.escalateOn', message: 'The agent can escalate but the organization has no escalation destination: nobody is named to follow up' });
  }
  return {
    numbers,
    escalation: { toolOffered, destinations: [...textUses.values()], statements },
    conversationLimits: { ...limits },
    willSay,
    warnings,
  };
}
