/**
 * The Postgres text-search configuration of a knowledge text (docs/knowledge.md "Languages"): which stemmer and
 * stop-word list `to_tsvector` / `to_tsquery` use for a source's chunks and for the queries that search them.
 *
 * Detection is tinyld's (https://github.com/komodojp/tinyld): a character n-gram model of about 60 languages that
 * scores each candidate 0..1. The agent's language setting (BCP 47, e.g. `es-MX`) is the prior: it decides when the
 * text is too short to tell, when the detector is unsure (no candidate reaches {@link MIN_ACCURACY}), and when its
 * own score is within {@link PRIOR_WEIGHT} of the leader's (a Spanish text that also scores as Portuguese stays
 * Spanish on a Spanish agent). A language Postgres ships no stemmer for gets `simple` (lower-cased words, no
 * stemming, no stop words). Pure and deterministic.
 */
import { detectAll } from 'tinyld';

/** Text-search configurations knowledge uses: ones every PostgreSQL installation ships (PostgreSQL docs §12.6 "Dictionaries"; `\dF`). */
export const TEXT_SEARCH_CONFIGS = ['english', 'spanish', 'french', 'german', 'portuguese', 'italian', 'dutch', 'simple'] as const;
/** One of {@link TEXT_SEARCH_CONFIGS}. */
export type TextSearchConfig = (typeof TEXT_SEARCH_CONFIGS)[number];

/** ISO 639-1 primary language subtag → configuration. */
const BY_LANGUAGE: Record<string, TextSearchConfig> = {
  en: 'english', es: 'spanish', fr: 'french', de: 'german', pt: 'portuguese', it: 'italian', nl: 'dutch',
};

/** Fewest letters a text needs before the detector is asked; below it the agent's language decides. */
export const MIN_LETTERS = 40;
/** Lowest tinyld score (0..1) a detection needs to count; below it the detector is unsure and the agent's language decides. */
export const MIN_ACCURACY = 0.05;
/** The agent's language wins when its score is at least this share of the leading language's. */
export const PRIOR_WEIGHT = 0.5;
/** Characters read from a text (detection is stable long before; tinyld's cost grows with the length). */
const SAMPLE_CHARS = 20_000;

/** ISO 639-1 primary subtag of a BCP 47 tag (`es-MX` → `es`), or '' when absent. */
function primaryOf(tag: string | null | undefined): string {
  return (tag ?? '').split('-')[0].toLowerCase();
}

/**
 * The language a text is written in (ISO 639-1), by tinyld, with the agent's language as the prior (module docstring).
 * @param agentLanguage BCP 47 tag of the agent, or null/undefined for no prior
 * @returns the ISO 639-1 code, or null when the text is too short or the detector unsure and there is no prior
 */
export function detectLanguage(text: string, agentLanguage?: string | null): string | null {
  const prior = primaryOf(agentLanguage) || null;
  const sample = text.slice(0, SAMPLE_CHARS);
  if ((sample.match(/\p{L}/gu)?.length ?? 0) < MIN_LETTERS) return prior;
  const scores = detectAll(sample);
  const top = scores[0];
  if (!top || top.accuracy < MIN_ACCURACY) return prior;
  const priorScore = prior ? (scores.find((s) => s.lang === prior)?.accuracy ?? 0) : 0;
  return prior && priorScore >= top.accuracy * PRIOR_WEIGHT ? prior : top.lang;
}

/**
 * The configuration of a text detected without a prior (tinyld alone).
 * @returns the configuration, or null when the text is too short or the detector unsure
 */
export function detectTextSearchConfig(text: string): TextSearchConfig | null {
  const lang = detectLanguage(text, null);
  return lang ? textSearchConfigForLanguage(lang) : null;
}

/** The configuration of a BCP 47 language tag (`es-MX` → `spanish`); `simple` for a language without a Postgres stemmer. */
export function textSearchConfigForLanguage(tag: string | null | undefined): TextSearchConfig {
  return BY_LANGUAGE[primaryOf(tag)] ?? 'simple';
}

/**
 * The configuration of a knowledge source: its detected language, the agent's as the prior (module docstring).
 * @param agentLanguage BCP 47 tag of the agent (agents.language)
 */
export function sourceTextSearchConfig(text: string, agentLanguage: string | null | undefined): TextSearchConfig {
  return textSearchConfigForLanguage(detectLanguage(text, agentLanguage));
}

/** True when `value` is one of {@link TEXT_SEARCH_CONFIGS} (values are interpolated into SQL only after this check). */
export function isTextSearchConfig(value: unknown): value is TextSearchConfig {
  return typeof value === 'string' && (TEXT_SEARCH_CONFIGS as readonly string[]).includes(value);
}
