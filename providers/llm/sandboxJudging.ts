/**
 * The sandbox LLM's judgements (docs/api-notes.md "Sandbox LLM"; ./sandbox.ts): the post-conversation analysis
 * (rule 0) and the verdict of a semantic topic guardrail (before rule 0), both by key words, deterministic.
 */
import type { LlmRequest } from './index';
import { fieldJsonSchema, type AnalysisRequest } from '../../domain/conversations/analysis';
import { excerpt, keyWords, normalizeWords, stem } from './sandboxWords';
import { extractArguments } from './sandboxTools';

/** Words that make a user message count as positive (whole words, case-insensitive). */
const POSITIVE = /\b(thanks|thank you|great|perfect|excellent|awesome|wonderful|happy|love|good|helpful|appreciate)\b/gi;
/** Words that make a user message count as negative. */
const NEGATIVE = /\b(angry|annoyed|awful|bad|terrible|horrible|hate|frustrated|frustrating|upset|useless|worst|ridiculous|disappointed)\b/gi;
/** A last user message that closes the matter. */
const CLOSING = /\b(thanks|thank you|that'?s all|perfect|great|bye|goodbye|solved|resolved)\b/i;

/**
 * Rule 0: a deterministic post-conversation analysis (docs/api-notes.md "Sandbox LLM"), from the user's lines only:
 * - `outcome`: `transferred` when the end reason is `transferred`; `abandoned` with no user line; `resolved` when
 *   the last user line thanks, says goodbye or that it is solved (`CLOSING`); otherwise `unresolved`;
 * - `sentiment`: positive words minus negative words over all user lines (`POSITIVE`, `NEGATIVE`): > 0 positive,
 *   < 0 negative, else neutral;
 * - `summary`: `The user wrote N message(s), first: "<excerpt>"; the agent answered M time(s); ended: <reason>.`
 *   (`The user said nothing; ended: <reason>.` with no user line);
 * - `fields`: read from the user lines joined by newlines with `extractArguments` and the fields' JSON Schemas
 *   (`name: value` pairs, else an ISO date for a date field, …); a value that does not convert is passed on as
 *   written, so the analysis's type check drops it.
 */
export function sandboxAnalysis(req: AnalysisRequest): { summary: string; outcome: string; sentiment: string; fields: Record<string, unknown> } {
  const user = req.transcript.filter((l) => l.speaker === 'user').map((l) => l.text);
  const agentCount = req.transcript.length - user.length;
  const reason = req.endReason ?? 'unknown';
  const last = user[user.length - 1];
  const outcome = req.endReason === 'transferred' ? 'transferred' : !last ? 'abandoned' : CLOSING.test(last) ? 'resolved' : 'unresolved';
  const all = user.join('\n');
  const score = (all.match(POSITIVE)?.length ?? 0) - (all.match(NEGATIVE)?.length ?? 0);
  const sentiment = score > 0 ? 'positive' : score < 0 ? 'negative' : 'neutral';
  const summary = user.length
    ? `The user wrote ${user.length} message(s), first: "${excerpt(user[0], 120)}"; the agent answered ${agentCount} time(s); ended: ${reason}.`
    : `The user said nothing; ended: ${reason}.`;
  const schema = { type: 'object', properties: Object.fromEntries(req.fields.map((f) => [f.name, fieldJsonSchema(f)])) };
  return { summary, outcome, sentiment, fields: user.length ? extractArguments(all, schema) : {} };
}

/**
 * Words of a topic or description that say nothing of what it covers ("medical advice" is about `medical`, not
 * `advice`): left out of a topic's terms by `sandboxClassification`.
 */
const GENERIC_TOPIC_WORDS = new Set(
  (
    'advice advise question help information info topic thing anything something everything stuff discuss discussion talk related general ' +
    'specific request issue matter opinion recommendation guidance support service answer detail about other'
  )
    .split(' ')
    .map(stem),
);

/**
 * Vocabularies of common blocked topics: a topic whose own words (name or description) include one of `names`
 * also has these `terms` (docs/api-notes.md "Sandbox LLM").
 */
const TOPIC_VOCABULARIES: { names: string[]; terms: string[] }[] = [
  {
    names: ['medical', 'medicine', 'medication', 'health', 'clinical', 'doctor', 'drug', 'pharma'],
    terms: [
      'medic', 'diagnos', 'symptom', 'dosage', 'dose', 'dosing', 'overdos', 'infect', 'prescri', 'antibiotic', 'amoxicillin', 'penicillin',
      'ibuprofen', 'acetaminophen', 'paracetamol', 'aspirin', 'opioid', 'fever', 'disease', 'illness', 'pills', 'vaccin', 'allerg', 'rash',
    ],
  },
  { names: ['legal', 'law', 'lawyer', 'attorney', 'lawsuit'], terms: ['legal', 'lawyer', 'attorney', 'lawsuit', 'sue', 'suing', 'liabil', 'litigat', 'custody', 'divorce'] },
  {
    names: ['financial', 'finance', 'investment', 'investing', 'tax', 'taxes', 'money'],
    terms: ['invest', 'stocks', 'crypto', 'bitcoin', 'retirement', 'portfolio', 'taxes', 'loan', 'mortgage', 'financ', 'dividend'],
  },
  { names: ['politics', 'political', 'election', 'elections'], terms: ['politic', 'election', 'vote', 'voting', 'president', 'democrat', 'republican', 'senat', 'congress', 'parliament'] },
];

/** Whether a message word matches a term: the term itself, or (terms of four letters or more) a word beginning with it. */
function matchesTerm(word: string, term: string): boolean {
  return word === term || (term.length >= 4 && word.startsWith(term));
}

/**
 * The sandbox's verdict on a semantic topic guardrail's question (`hints.classification`; docs/api-notes.md "Sandbox
 * LLM"). A topic's terms are the key words (`keyWords`) of its name and description that are not generic
 * (`GENERIC_TOPIC_WORDS`: advice, question, help, information, …), plus the vocabulary (`TOPIC_VOCABULARIES`) of
 * every common topic one of those words names: "medical advice" has `medical`, and through it `diagnos`, `dosage`,
 * `infect`, `amoxicillin`, `prescri`, … . A topic applies when a word of the message matches one of its terms (the
 * term itself, or, for terms of four letters or more, a word beginning with it: `infect` matches "infection").
 * @returns `{applies, reason}` as the classifier asks: the topics that apply in their order; the reason names the
 *   first word found, or says none was
 */
export function sandboxClassification(c: NonNullable<NonNullable<LlmRequest['hints']>['classification']>): { applies: string[]; reason: string } {
  const said = normalizeWords(c.message).split(' ').filter(Boolean);
  const applies: string[] = [];
  let reason = '';
  for (const t of c.topics) {
    const own = [...keyWords(`${t.topic} ${t.description ?? ''}`)].filter((w) => !GENERIC_TOPIC_WORDS.has(w));
    const terms = new Set(own);
    for (const v of TOPIC_VOCABULARIES) if (own.some((w) => v.names.some((n) => matchesTerm(w, stem(n))))) v.terms.forEach((x) => terms.add(x));
    const found = said.find((w) => [...terms].some((term) => matchesTerm(w, term)));
    if (found === undefined) continue;
    applies.push(t.topic);
    if (!reason) reason = `The message mentions "${found}", which is about ${t.topic}.`;
  }
  return { applies, reason: reason || "No blocked topic's key words appear in the message." };
}
