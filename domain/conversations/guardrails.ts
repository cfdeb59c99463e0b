/**
 * Guardrails executed on every turn (spec "What the service does": guardrails attach to the agent; docs/api-notes.md
 * "Conversations"): input checks decide whether the agent answers at all, output checks rewrite what it
 * says, and each decision is recorded in the turn's receipt. Pure functions.
 */
import type { BlockedTopic, Guardrails, TopicMatch } from '../../schemas/types/guardrails';
import type { TurnReceipt } from '../../schemas/types/chat';

/** One guardrail decision for the receipt: which rule, what it did (`refused`, `escalated`, `replaced`, `redacted`, `ended`), what matched (≤ 200 characters) and on which side of the turn. */
export type GuardrailDecision = TurnReceipt['guardrails'][number];

/** The outcome of the input checks. */
export interface InputVerdict {
  /** Set when the agent must not answer normally: say this instead. */
  refusal: string | null;
  /** The user asked for something in `escalateOn`: the conversation is handed off. */
  escalate: boolean;
  decisions: GuardrailDecision[];
}

const words = (s: string): string[] => s.toLowerCase().normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? [];

/** True when every word of `phrase` occurs in `text` in order as whole words (case-insensitive). */
export function mentions(text: string, phrase: string): boolean {
  const t = ` ${words(text).join(' ')} `;
  const p = words(phrase).join(' ');
  return p.length > 0 && t.includes(` ${p} `);
}

/** A blocked topic with its match mode made explicit (schemas/types/guardrails.ts `BlockedTopic`). */
export interface TopicRule {
  topic: string;
  match: TopicMatch;
  /** What the topic covers (for the model judging a `semantic` topic); null when none was given. */
  description: string | null;
}

/** One stored blocked topic as a rule: a plain string is a `phrase` topic without description. */
export function topicRule(t: BlockedTopic): TopicRule {
  if (typeof t === 'string') return { topic: t, match: 'phrase', description: null };
  return { topic: t.topic, match: t.match ?? 'phrase', description: t.description?.trim() || null };
}

/** The rules of each blocked-topic list (a turn reads them on every message: normalize once per list). */
const ruleCache = new WeakMap<readonly BlockedTopic[], TopicRule[]>();

/** The blocked topics of `g` as rules, in their order (old string-only lists are `phrase` topics). */
export function topicRules(g: Pick<Guardrails, 'blockedTopics'>): TopicRule[] {
  let rules = ruleCache.get(g.blockedTopics);
  if (!rules) ruleCache.set(g.blockedTopics, (rules = g.blockedTopics.map(topicRule)));
  return rules;
}

/** The `semantic` blocked topics of `g` (judged by the model, ./topicClassifier.ts). */
export function semanticTopics(g: Pick<Guardrails, 'blockedTopics'>): TopicRule[] {
  return topicRules(g).filter((r) => r.match === 'semantic');
}

/** Refusal said for a blocked topic. */
export function topicRefusal(topic: string): string {
  return `I'm sorry, I can't help with ${topic}. Is there anything else I can do for you?`;
}

/** What the agent says when a request is handed to a person (`escalateOn`). */
export const ESCALATION_REPLY = "I'll connect you with a member of our team who can help with that.";

/**
 * Input checks without a model: the `phrase` topics of `blockedTopics` (refuse) then `escalateOn` (hand off),
 * matched as whole-word phrases; each decision says why (`reason`). `semantic` topics are left to
 * ./topicClassifier.ts `checkSemanticTopics`, which the runtime asks next.
 * @param text the user's message
 */
export function checkInput(text: string, g: Guardrails): InputVerdict {
  const decisions: GuardrailDecision[] = [];
  for (const { topic, match } of topicRules(g)) {
    if (match === 'phrase' && mentions(text, topic)) {
      decisions.push({ rule: 'blockedTopics', action: 'refused', excerpt: topic.slice(0, 200), stage: 'input', match: 'phrase', reason: phraseReason(topic) });
      return { refusal: topicRefusal(topic), escalate: false, decisions };
    }
  }
  for (const situation of g.escalateOn) {
    if (mentions(text, situation)) {
      decisions.push({ rule: 'escalateOn', action: 'escalated', excerpt: situation.slice(0, 200), stage: 'input', reason: phraseReason(situation) });
      return { refusal: ESCALATION_REPLY, escalate: true, decisions };
    }
  }
  return { refusal: null, escalate: false, decisions };
}

/** Longest `reason` of a guardrail decision, characters. */
export const REASON_MAX = 300;

/** Why a phrase matched: the words the message contains. */
function phraseReason(phrase: string): string {
  return `the message contains the words "${phrase.slice(0, 200)}"`.slice(0, REASON_MAX);
}

/** Words the profanity filter masks (a short list of common English profanity; the mask keeps the first letter). */
const PROFANITY = ['fuck', 'fucking', 'shit', 'bitch', 'bastard', 'asshole', 'dick', 'crap', 'damn'];
const PROFANITY_RE = new RegExp(`\\b(${PROFANITY.join('|')})\\b`, 'gi');

/** Compiled patterns of each phrase list (a streamed answer is checked at every token: compile once per list). */
const phraseCache = new WeakMap<readonly string[], [string, RegExp][]>();

/** `[phrase, case-insensitive global pattern]` per non-blank phrase; whitespace in a phrase matches any whitespace. */
function phrasePatterns(phrases: readonly string[]): [string, RegExp][] {
  let out = phraseCache.get(phrases);
  if (!out) {
    out = phrases
      .filter((p) => p.trim())
      .map((p) => [p, new RegExp(p.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\s+/g, '\\s+'), 'gi')]);
    phraseCache.set(phrases, out);
  }
  return out;
}

/**
 * Output checks on what the agent is about to say: `forbiddenPhrases` are removed (replaced by `[…]`)
 * and profanity is masked when `profanityFilter` is on.
 * @returns the text to say and the decisions taken
 */
export function checkOutput(text: string, g: Guardrails): { text: string; decisions: GuardrailDecision[] } {
  const decisions: GuardrailDecision[] = [];
  let out = text;
  for (const [phrase, re] of phrasePatterns(g.forbiddenPhrases)) {
    re.lastIndex = 0;
    if (re.test(out)) {
      out = out.replace(re, '[…]');
      decisions.push({ rule: 'forbiddenPhrases', action: 'replaced', excerpt: phrase.slice(0, 200), stage: 'output' });
    }
  }
  if (g.profanityFilter) {
    const found = out.match(PROFANITY_RE);
    if (found) {
      out = out.replace(PROFANITY_RE, (w) => w[0] + '*'.repeat(w.length - 1));
      decisions.push({ rule: 'profanityFilter', action: 'replaced', excerpt: `${found.length} word(s)`, stage: 'output' });
    }
  }
  return { text: out, decisions };
}

/** Luhn check (ISO/IEC 7812-1) of a digit string. */
export function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

const CARD_RE = /\b(?:\d[ -]?){12,18}\d\b/g;
const SSN_RE = /\b\d{3}-\d{2}-\d{4}\b/g;

/**
 * PII redaction (`redactPii`): payment card numbers (13–19 digits passing the Luhn check) keep their last
 * four digits, US Social Security numbers (ddd-dd-dddd) are masked whole. Applied to text before it is
 * stored (transcripts) and to tool arguments before they leave the service.
 */
export function redactPii(text: string): { text: string; kinds: string[] } {
  const kinds: string[] = [];
  let out = text.replace(CARD_RE, (m) => {
    const digits = m.replace(/\D/g, '');
    if (digits.length < 13 || digits.length > 19 || !luhn(digits)) return m;
    kinds.push('card_number');
    return `[card ending ${digits.slice(-4)}]`;
  });
  out = out.replace(SSN_RE, () => {
    kinds.push('ssn');
    return '[ssn]';
  });
  return { text: out, kinds };
}
