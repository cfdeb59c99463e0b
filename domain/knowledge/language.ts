/**
 * The Postgres text-search configuration of a knowledge text (docs/knowledge.md "Languages"): which stemmer and
 * stop-word list `to_tsvector` / `to_tsquery` use for a source's chunks and for the queries that search them.
 *
 * Detection counts the most frequent function words (stop words) of each supported language in the text: they make
 * up a large, stable share of any running prose (Zipf), so a few hundred words are enough to tell English from
 * Spanish or German, and the count needs no model. When the text is too short or no language clearly leads, the
 * agent's language setting (BCP 47, e.g. `es-MX`) decides; a language Postgres ships no stemmer for gets `simple`
 * (lower-cased words, no stemming, no stop words). Pure and deterministic.
 */

/** Text-search configurations knowledge uses: ones every PostgreSQL installation ships (PostgreSQL docs §12.6 "Dictionaries"; `\dF`). */
export const TEXT_SEARCH_CONFIGS = ['english', 'spanish', 'french', 'german', 'portuguese', 'italian', 'dutch', 'simple'] as const;
/** One of {@link TEXT_SEARCH_CONFIGS}. */
export type TextSearchConfig = (typeof TEXT_SEARCH_CONFIGS)[number];

/** ISO 639-1 primary language subtag → configuration. */
const BY_LANGUAGE: Record<string, TextSearchConfig> = {
  en: 'english', es: 'spanish', fr: 'french', de: 'german', pt: 'portuguese', it: 'italian', nl: 'dutch',
};

/**
 * Function words per language: frequent in running text and rare in the others' (words shared by two languages,
 * such as `de`, `la`, `en`, `a`, `e`, `o`, are left out so they do not blur the vote).
 */
const STOP_WORDS: Record<Exclude<TextSearchConfig, 'simple'>, readonly string[]> = {
  english: ['the', 'and', 'of', 'to', 'is', 'in', 'that', 'it', 'for', 'you', 'with', 'are', 'on', 'this', 'be', 'or', 'have', 'we', 'your', 'at', 'by', 'from', 'not', 'can', 'will', 'our', 'an', 'if', 'what', 'which'],
  spanish: ['el', 'los', 'las', 'del', 'y', 'que', 'es', 'por', 'para', 'con', 'una', 'un', 'su', 'sus', 'al', 'lo', 'como', 'más', 'pero', 'este', 'esta', 'son', 'también', 'nuestro', 'nuestros', 'usted', 'puede', 'hasta', 'cuando', 'está'],
  french: ['le', 'les', 'des', 'et', 'est', 'du', 'une', 'que', 'qui', 'dans', 'pour', 'pas', 'sur', 'au', 'avec', 'ce', 'ne', 'vous', 'nous', 'sont', 'aux', 'mais', 'ou', 'leur', 'cette', 'être', 'peut', 'votre', 'nos', 'sans'],
  german: ['der', 'die', 'und', 'das', 'ist', 'nicht', 'mit', 'den', 'sie', 'auf', 'ein', 'eine', 'zu', 'dem', 'von', 'für', 'sich', 'auch', 'wir', 'ihr', 'werden', 'oder', 'bei', 'nach', 'wie', 'kann', 'sind', 'einen', 'wird', 'noch'],
  portuguese: ['os', 'as', 'do', 'da', 'dos', 'das', 'não', 'uma', 'um', 'em', 'para', 'com', 'no', 'na', 'pelo', 'pela', 'seu', 'sua', 'você', 'mais', 'mas', 'ao', 'são', 'também', 'nosso', 'nossa', 'pode', 'até', 'quando', 'está'],
  italian: ['il', 'di', 'che', 'è', 'per', 'non', 'una', 'sono', 'della', 'delle', 'del', 'gli', 'dei', 'nel', 'nella', 'alla', 'con', 'anche', 'come', 'più', 'ma', 'questo', 'questa', 'suo', 'loro', 'può', 'ci', 'si', 'ed', 'degli'],
  dutch: ['de', 'het', 'een', 'en', 'van', 'is', 'dat', 'niet', 'zijn', 'op', 'te', 'met', 'voor', 'ook', 'aan', 'wij', 'bij', 'uw', 'u', 'naar', 'kan', 'wordt', 'worden', 'ons', 'onze', 'maar', 'als', 'dan', 'nog', 'heeft'],
};

// A word in several lists counts for none of them.
const OWNER = new Map<string, TextSearchConfig | null>();
for (const [cfg, words] of Object.entries(STOP_WORDS) as [TextSearchConfig, readonly string[]][]) {
  for (const w of words) OWNER.set(w, OWNER.has(w) && OWNER.get(w) !== cfg ? null : cfg);
}

/** Fewest recognised function words for a detection to count; below it the agent's language decides. */
export const MIN_EVIDENCE_WORDS = 4;
/** Share of the recognised function words the leading language needs (the rest is noise: names, quotes, code). */
export const MIN_LEAD_SHARE = 0.5;

/** Words of a text, lower-cased (Unicode letters, so `más` and `être` stay whole). Only the first 20,000 characters are read. */
function words(text: string): string[] {
  return text.slice(0, 20_000).toLowerCase().match(/\p{L}+/gu) ?? [];
}

/**
 * The language a text is written in, by function-word counts.
 * @returns the configuration, or null when the text holds fewer than MIN_EVIDENCE_WORDS function words or no
 *   language has MIN_LEAD_SHARE of them
 */
export function detectTextSearchConfig(text: string): TextSearchConfig | null {
  const counts = new Map<TextSearchConfig, number>();
  let total = 0;
  for (const w of words(text)) {
    const cfg = OWNER.get(w);
    if (!cfg) continue;
    counts.set(cfg, (counts.get(cfg) ?? 0) + 1);
    total++;
  }
  if (total < MIN_EVIDENCE_WORDS) return null;
  let best: TextSearchConfig | null = null;
  let bestCount = 0;
  for (const [cfg, n] of counts) if (n > bestCount) [best, bestCount] = [cfg, n];
  return best && bestCount / total >= MIN_LEAD_SHARE ? best : null;
}

/** The configuration of a BCP 47 language tag (`es-MX` → `spanish`); `simple` for a language without a Postgres stemmer. */
export function textSearchConfigForLanguage(tag: string | null | undefined): TextSearchConfig {
  const primary = (tag ?? '').split('-')[0].toLowerCase();
  return BY_LANGUAGE[primary] ?? 'simple';
}

/**
 * The configuration of a knowledge source: detected from its text, else the agent's language (module docstring).
 * @param agentLanguage BCP 47 tag of the agent (agents.language), used when detection is inconclusive
 */
export function sourceTextSearchConfig(text: string, agentLanguage: string | null | undefined): TextSearchConfig {
  return detectTextSearchConfig(text) ?? textSearchConfigForLanguage(agentLanguage);
}

/** True when `value` is one of {@link TEXT_SEARCH_CONFIGS} (values are interpolated into SQL only after this check). */
export function isTextSearchConfig(value: unknown): value is TextSearchConfig {
  return typeof value === 'string' && (TEXT_SEARCH_CONFIGS as readonly string[]).includes(value);
}
