/**
 * What the in-process full-text index of an agent's knowledge reads (services/knowledge/lexicalIndex.ts;
 * docs/knowledge.md "Retrieval"): the chunks of a set of sources with their stored `tsv` and the sources' text-search
 * configurations, read once per change of that knowledge, and the lexemes of a query per configuration
 * (`knowledge_tsvector`, migration 20261127000600), so ranking needs no other statement.
 */
import { prepared } from '../index';
import type { Conn } from './agents';

/** One chunk of {@link lexicalCorpus}. */
export interface CorpusChunk {
  id: string;
  agentId: string;
  sourceId: string;
  ordinal: number;
  content: string;
  config: string;
  /** The stored `tsv` as Postgres prints it. */
  tsv: string;
}

/** One source of {@link lexicalCorpus}. */
export interface CorpusSource {
  id: string;
  agentId: string;
  kind: string;
  name: string | null;
  title: string | null;
  url: string | null;
  config: string;
  /** The source id's place among the set's ids in the database's collation (ties of a ranking are broken by source id, then ordinal). */
  order: number;
}

const CORPUS_SQL = `SELECT (SELECT coalesce(json_agg(json_build_object('id', s.id, 'agentId', s.agent_id, 'kind', s.kind, 'name', s.name, 'title', s.title,
                                   'url', s.url, 'config', s.text_search_config) ORDER BY s.id), '[]'::json)
                      FROM knowledge_sources s WHERE s.org_id = ? AND s.id = ANY(?::text[])) AS sources,
                   (SELECT coalesce(json_agg(json_build_object('id', c.id, 'agentId', c.agent_id, 'sourceId', c.source_id, 'ordinal', c.ordinal,
                                   'content', c.content, 'config', c.text_search_config, 'tsv', c.tsv::text)), '[]'::json)
                      FROM (SELECT * FROM knowledge_chunks c WHERE c.org_id = ? AND c.source_id = ANY(?::text[]) LIMIT ?) c) AS chunks`;

/**
 * The chunks of `sourceIds` (of any agent: retrieval filters by agent) and those sources, in one statement.
 * @param maxChunks read at most this many plus one (more: the caller does not hold the set)
 */
export async function lexicalCorpus(db: Conn, orgId: string, sourceIds: readonly string[], maxChunks: number): Promise<{ sources: CorpusSource[]; chunks: CorpusChunk[] }> {
  const res = await db.raw(CORPUS_SQL, [orgId, [...sourceIds], orgId, [...sourceIds], maxChunks + 1]).options(prepared(CORPUS_SQL));
  const r = res.rows[0] as { sources: Omit<CorpusSource, 'order'>[]; chunks: CorpusChunk[] };
  return { sources: r.sources.map((s, order) => ({ ...s, order })), chunks: r.chunks };
}

const LEXEMES_SQL = `SELECT q.i::int - 1 AS i, tsvector_to_array(knowledge_tsvector(q.cfg, q.text)) AS lexemes
                       FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS q(cfg, text, i)`;

/**
 * The distinct lexemes of each `(config, text)` pair, as the full-text search parses a query
 * (db/repositories/knowledge.ts `searchChunks`: `knowledge_tsvector(config, text)`).
 * @returns one array per pair, in their order
 */
export async function queryLexemes(db: Conn, pairs: ReadonlyArray<{ config: string; text: string }>): Promise<string[][]> {
  if (!pairs.length) return [];
  const res = await db.raw(LEXEMES_SQL, [pairs.map((p) => p.config), pairs.map((p) => p.text)]).options(prepared(LEXEMES_SQL));
  const out: string[][] = pairs.map(() => []);
  for (const r of res.rows as Array<{ i: number; lexemes: string[] }>) out[r.i] = r.lexemes;
  return out;
}
