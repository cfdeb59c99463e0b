/**
 * Semantic topic guardrails (docs/api-notes.md "Conversations"; schemas/types/guardrails.ts `TopicMatch`): a blocked
 * topic with `match: semantic` is judged by the agent's model, not by its words — "is it an infection? Should I take
 * amoxicillin?" is about "medical advice" although it never says so. One classification call per turn covers every
 * semantic topic of the agent:
 * - the request: a short system message listing the topics with their descriptions, the user's message, JSON mode
 *   (`responseFormat: 'json_object'`: OpenAI "JSON mode"), temperature 0, at most {@link CLASSIFIER_MAX_TOKENS}
 *   tokens, the agent's model and fallback model; the sandbox answers it by key words (`hints.classification`);
 * - the answer: `{"applies": ["<topic as listed>", …], "reason": "<one sentence>"}`; the first listed topic that
 *   applies refuses the turn with its refusal, and the receipt records the topic and the model's reason;
 * - fail-closed: no verdict (the model failed, timed out or answered something unreadable) is no answer — the turn
 *   refuses politely ({@link CLASSIFIER_UNAVAILABLE_REPLY}) and the receipt records why (OWASP "Top 10 for LLM
 *   Applications": a guardrail that fails open is no guardrail);
 * - verdicts are cached per organization, model, topics and message text ({@link VERDICT_CACHE_MAX} entries, least
 *   recently used dropped first), so one message is classified once: a retried turn, or the same message again,
 *   makes no second call. Failures are not cached.
 * Pure but for that bounded cache; the model is a port.
 */
import type { GuardrailDecision, TopicRule } from './guardrails';
import { REASON_MAX, topicRefusal } from './guardrails';
import type { LlmMessage, LlmProvider, LlmUsage } from './llm';

/** Most completion tokens of one classification answer. */
export const CLASSIFIER_MAX_TOKENS = 150;
/** Verdicts kept in memory (per process). */
export const VERDICT_CACHE_MAX = 1000;
/** Said when no verdict could be had (fail-closed). */
export const CLASSIFIER_UNAVAILABLE_REPLY = "I'm sorry, I can't help with that just now. Is there anything else I can do for you?";

/** What the model said about one message. */
export interface TopicVerdict {
  /** The topics (as listed) the message is about; empty when none. */
  applies: string[];
  /** The model's one-sentence reason (≤ 300 characters; may be empty). */
  reason: string;
}

/** The outcome of the semantic check of one message. */
export interface SemanticCheck {
  /** Set when the turn must refuse: say this instead of answering. */
  refusal: string | null;
  /** The decision that refused (a topic applied, or fail-closed); empty when the message may be answered. */
  decisions: GuardrailDecision[];
  /** Tokens of the classification call (zero when the verdict was cached). */
  usage: LlmUsage;
  /** The model that answered; null when none did. */
  model: string | null;
  /** Whether a model call was made (false: the verdict was cached). */
  called: boolean;
}

/** Model settings of the classification call: the agent's (its temperature and token limit are not used). */
export interface ClassifierSettings {
  model?: string;
  fallbackModel?: string;
  /** Scope of the verdict cache: the organization (a verdict never crosses tenants, not even as a timing). */
  cacheScope: string;
}

const ZERO: LlmUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/** The classification request's messages: the topics and the answer's shape, then the message to judge. */
export function classificationMessages(text: string, topics: readonly TopicRule[]): LlmMessage[] {
  const list = topics.map((t, i) => `${i + 1}. ${JSON.stringify(t.topic)}${t.description ? `: ${t.description}` : ''}`).join('\n');
  return [
    {
      role: 'system',
      content:
        "You are a guardrail classifier for a customer-facing agent. Decide which of these blocked topics the user's message is about:\n" +
        `${list}\n` +
        'A topic applies when the message asks for, or is about, what the topic covers, even without naming it. ' +
        'Answer with one JSON object and nothing else: {"applies": [the topics that apply, spelled exactly as listed], "reason": "one short sentence"}. ' +
        'Use an empty list when none applies. Do not answer the message itself.',
    },
    { role: 'user', content: text },
  ];
}

/**
 * The verdict in a classification answer, or null when it cannot be read (not one JSON object, or `applies` not
 * a list). Topic names are matched case-insensitively to `topics`; names of no listed topic are ignored.
 */
export function parseClassification(content: string | null, topics: readonly TopicRule[]): TopicVerdict | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse((content ?? '').trim());
  } catch {
    return null;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
  const { applies, reason } = parsed as { applies?: unknown; reason?: unknown };
  if (!Array.isArray(applies)) return null;
  const said = new Set(applies.filter((a): a is string => typeof a === 'string').map((a) => a.trim().toLowerCase()));
  return {
    applies: topics.filter((t) => said.has(t.topic.trim().toLowerCase())).map((t) => t.topic),
    reason: typeof reason === 'string' ? reason.trim().slice(0, REASON_MAX) : '',
  };
}

/** Verdicts by cache key, least recently used first (Map keeps insertion order). */
const verdicts = new Map<string, TopicVerdict>();

/** Forgets every cached verdict (tests). */
export function clearVerdictCache(): void {
  verdicts.clear();
}

function cacheKey(text: string, topics: readonly TopicRule[], s: ClassifierSettings): string {
  return JSON.stringify([s.cacheScope, s.model ?? '', s.fallbackModel ?? '', topics.map((t) => [t.topic, t.description]), text]);
}

/** Whether `err` is the caller aborting (not a model failure, so not a verdict either). */
function isAbort(err: unknown): boolean {
  return (err as { name?: string } | null)?.name === 'AbortError';
}

/**
 * Judges `text` against the semantic topics (module docstring).
 * @param topics the agent's `semantic` blocked topics (./guardrails.ts `semanticTopics`); none: no call
 * @returns the refusal and its decision when a topic applies or no verdict could be had; usage of the call
 * @throws only the caller's abort (every model failure is a fail-closed refusal)
 */
export async function checkSemanticTopics(text: string, topics: readonly TopicRule[], llm: LlmProvider, settings: ClassifierSettings, signal?: AbortSignal): Promise<SemanticCheck> {
  if (!topics.length) return { refusal: null, decisions: [], usage: ZERO, model: null, called: false };
  const key = cacheKey(text, topics, settings);
  let verdict = verdicts.get(key);
  let usage = ZERO;
  let model: string | null = null;
  const called = !verdict;
  if (verdict) {
    verdicts.delete(key);
    verdicts.set(key, verdict);
  } else {
    let failure: string | null = null;
    try {
      const res = await llm.complete({
        messages: classificationMessages(text, topics),
        model: settings.model,
        fallbackModel: settings.fallbackModel,
        temperature: 0,
        maxTokens: CLASSIFIER_MAX_TOKENS,
        responseFormat: 'json_object',
        hints: { classification: { message: text, topics: topics.map((t) => ({ topic: t.topic, description: t.description })) } },
        signal,
      });
      usage = res.usage;
      model = res.model;
      verdict = parseClassification(res.content, topics) ?? undefined;
      if (!verdict) failure = "the model's verdict could not be read";
    } catch (err) {
      if (isAbort(err) || signal?.aborted) throw err;
      const kind = (err as { kind?: unknown } | null)?.kind;
      failure = `the model could not be asked (${typeof kind === 'string' ? kind : 'error'})`;
    }
    if (!verdict) {
      return {
        refusal: CLASSIFIER_UNAVAILABLE_REPLY,
        decisions: [
          {
            rule: 'blockedTopics',
            action: 'refused',
            excerpt: topics.map((t) => t.topic).join(', ').slice(0, 200),
            stage: 'input',
            match: 'semantic',
            reason: `${failure}: refused without a verdict (fail-closed)`.slice(0, REASON_MAX),
          },
        ],
        usage,
        model,
        called,
      };
    }
    if (verdicts.size >= VERDICT_CACHE_MAX) verdicts.delete(verdicts.keys().next().value as string);
    verdicts.set(key, verdict);
  }
  const hit = verdict.applies[0];
  if (hit === undefined) return { refusal: null, decisions: [], usage, model, called };
  const why = verdict.reason ? `the model judged the message to be about it: ${verdict.reason}` : 'the model judged the message to be about it';
  return {
    refusal: topicRefusal(hit),
    decisions: [{ rule: 'blockedTopics', action: 'refused', excerpt: hit.slice(0, 200), stage: 'input', match: 'semantic', reason: why.slice(0, REASON_MAX) }],
    usage,
    model,
    called,
  };
}
