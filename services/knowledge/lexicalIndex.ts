/**
 * An in-process full-text index of the knowledge a conversation reads (docs/knowledge.md "Retrieval"): the chunks of
 * a version's sources with their stored `tsv`, read once per change of that knowledge and evicted by the change feed
 * (db/changeFeed.ts; `knowledge_sources` and `knowledge_chunks` notify per statement with the organization id,
 * migration 20261129001500), so a turn ranks and reads its hits without a statement. It gives exactly the lists
 * Postgres gives (db/repositories/knowledge.ts `searchChunks`, `rankChunkLists`, `chunksByIds`): the same query
 * lexemes (`knowledge_tsvector`, asked of Postgres once per configuration and text, then kept), the same candidates,
 * `ts_rank(…, 32)` in the same float4 arithmetic (domain/knowledge/tsRank.ts) and the same ties (source id in the
 * database's collation, then ordinal). Where it could differ it declines and Postgres ranks: a set of more than
 * {@link MAX_INDEXED_CHUNKS} chunks (Postgres then bounds candidates per word), a query of more than
 * MAX_QUERY_TERMS lexemes (Postgres keeps the first in its collation), a lexeme other than letters and digits (the
 * `simple` parser could split it), and while the feed is not live (changes could be missed).
 */
import type { Db } from '../../db';
import type { ChangeFeed } from '../../db/changeFeed';
import { CANDIDATES_PER_TERM, MAX_QUERY_TERMS, type RankedChunks } from '../../db/repositories/knowledge';
import { lexicalCorpus, queryLexemes, type CorpusChunk, type CorpusSource } from '../../db/repositories/knowledgeLexical';
import { float4AsClientReads, parseTsvector, tsRankOr, type LexemeWeights } from '../../domain/knowledge/tsRank';
import type { KnowledgePreviewHit } from '../../schemas/types/knowledge';

/** Chunks of one source set held at most: up to it no word can match more than CANDIDATES_PER_TERM chunks, so Postgres's ranking is exact. */
export const MAX_INDEXED_CHUNKS = CANDIDATES_PER_TERM;
/** Chunks read at most per process between wholesale clears of every set: bounds the memory the indexes hold. */
const MAX_HELD_CHUNKS = 100_000;
/** Ranked lists kept per index (the earlier turns of a conversation are ranked again on each turn; oldest dropped). */
const MAX_LISTS = 1000;
/** Query lexeme lists kept (least recently used dropped). */
const MAX_LEXEME_ENTRIES = 20_000;
/** A lexeme the `simple` configuration reads back as itself. */
const PLAIN_LEXEME = /^[\p{Ll}\p{Lo}\p{Nd}]{1,200}$/u;

/** One indexed chunk. */
interface IndexedChunk extends CorpusChunk {
  doc: LexemeWeights;
  sourceOrder: number;
}

/** The index of one source set. */
export class KnowledgeCorpus {
  private readonly chunks = new Map<string, IndexedChunk>();
  private readonly sources = new Map<string, CorpusSource>();
  /** config → lexeme → chunks holding it. */
  private readonly postings = new Map<string, Map<string, IndexedChunk[]>>();
  /** Ranked lists by agent, limit and query lexemes (an index never changes: a change of its knowledge replaces it). */
  private readonly lists = new Map<string, RankedChunks>();

  constructor(sources: readonly CorpusSource[], chunks: readonly CorpusChunk[]) {
    for (const s of sources) this.sources.set(s.id, s);
    for (const c of chunks) {
      const source = this.sources.get(c.sourceId);
      if (!source) continue;
      const indexed: IndexedChunk = { ...c, doc: parseTsvector(c.tsv), sourceOrder: source.order };
      this.chunks.set(c.id, indexed);
      let byLexeme = this.postings.get(c.config);
      if (!byLexeme) this.postings.set(c.config, (byLexeme = new Map()));
      for (const lex of indexed.doc.keys()) {
        const list = byLexeme.get(lex);
        if (list) list.push(indexed);
        else byLexeme.set(lex, [indexed]);
      }
    }
  }

  /** The configurations searched for an agent: those of its sources in the set (`searchChunks`' `cfg`). */
  configsOf(agentId: string): string[] {
    return [...new Set([...this.sources.values()].filter((s) => s.agentId === agentId).map((s) => s.config))];
  }

  /**
   * One ranked list per query (`rankChunkLists`' result): `lexemes[qi]` maps each configuration to the query's
   * distinct lexemes. @returns null when a query is one this index declines (module docstring)
   */
  rank(agentId: string, lexemes: ReadonlyArray<ReadonlyMap<string, readonly string[]>>, limit: number): RankedChunks[] | null {
    const lists: RankedChunks[] = [];
    for (const perConfig of lexemes) {
      const key = `${agentId}\n${limit}\n${[...perConfig].map(([config, words]) => `${config}:${words.join(' ')}`).join('\n')}`;
      const held = this.lists.get(key);
      if (held) {
        lists.push(held);
        continue;
      }
      const scored: Array<{ c: IndexedChunk; score: number }> = [];
      for (const [config, words] of perConfig) {
        if (words.length > MAX_QUERY_TERMS || words.some((w) => !PLAIN_LEXEME.test(w))) return null;
        const byLexeme = this.postings.get(config);
        if (!byLexeme) continue;
        const seen = new Set<IndexedChunk>();
        for (const w of words) for (const c of byLexeme.get(w) ?? []) if (c.agentId === agentId) seen.add(c);
        for (const c of seen) scored.push({ c, score: tsRankOr(c.doc, words) });
      }
      scored.sort((a, b) => b.score - a.score || a.c.sourceOrder - b.c.sourceOrder || a.c.ordinal - b.c.ordinal);
      const list = scored.slice(0, limit).map(({ c, score }) => ({ chunkId: c.id, score: Number(float4AsClientReads(score).toFixed(6)) }));
      if (this.lists.size >= MAX_LISTS) this.lists.delete(this.lists.keys().next().value as string);
      this.lists.set(key, list);
      lists.push(list);
    }
    return lists;
  }

  /** `chunksByIds`' hits, in the order of `ids`. @returns null when an id is not in this set (Postgres then reads them) */
  hits(ids: readonly string[], scores: ReadonlyMap<string, number>): KnowledgePreviewHit[] | null {
    const out: KnowledgePreviewHit[] = [];
    for (const id of ids) {
      const c = this.chunks.get(id);
      if (!c) return null;
      const s = this.sources.get(c.sourceId)!;
      out.push({ chunkId: c.id, ordinal: c.ordinal, content: c.content, score: scores.get(id) ?? 0, source: { id: s.id, kind: s.kind as KnowledgePreviewHit['source']['kind'], name: s.name, title: s.title, url: s.url } });
    }
    return out;
  }
}

/**
 * The process's knowledge indexes, one per organization and source set, and the query lexemes asked of Postgres,
 * kept by configuration and text (a deterministic function: `knowledge_tsvector` is IMMUTABLE).
 */
export class KnowledgeIndexes {
  private readonly sets = new Map<string, { corpus: Promise<KnowledgeCorpus | null>; expiresAt: number }>();
  /** Chunks read since the last wholesale clear: an upper bound of those held (evicted and expired sets are not subtracted). */
  private heldChunks = 0;
  private readonly generations = new Map<string, number>();
  private readonly lexemes = new Map<string, readonly string[]>();

  /**
   * @param ttlSeconds upper bound on staleness should a notification be lost (as db/changeFeed.ts `ReadCache`)
   */
  constructor(
    private readonly feed: ChangeFeed,
    private readonly ttlSeconds: number,
  ) {
    const evict = (orgId: string) => {
      this.generations.set(orgId, (this.generations.get(orgId) ?? 0) + 1);
      for (const key of this.sets.keys()) if (key.startsWith(`${orgId}\n`)) this.sets.delete(key);
    };
    feed.on('knowledge_sources', evict);
    feed.on('knowledge_chunks', evict);
    feed.onLost(() => this.clear());
  }

  /** Drops every set (the count of chunks held restarts: sets still being read add theirs when they are in). */
  private clear(): void {
    this.sets.clear();
    this.heldChunks = 0;
  }

  /** The index of `sourceIds`' chunks, read on first use. @returns null while the feed is not live or beyond MAX_INDEXED_CHUNKS */
  async corpus(db: Db, orgId: string, sourceIds: readonly string[]): Promise<KnowledgeCorpus | null> {
    if (!this.feed.live || this.ttlSeconds <= 0) return null;
    const key = `${orgId}\n${[...sourceIds].sort().join(',')}`;
    const hit = this.sets.get(key);
    if (hit && hit.expiresAt > Date.now()) return hit.corpus;
    const gen = this.generations.get(orgId) ?? 0;
    const corpus = lexicalCorpus(db, orgId, sourceIds, MAX_INDEXED_CHUNKS).then(({ sources, chunks }) => {
      if (chunks.length > MAX_INDEXED_CHUNKS) return null;
      this.heldChunks += chunks.length;
      if (this.heldChunks > MAX_HELD_CHUNKS) this.clear();
      return new KnowledgeCorpus(sources, chunks);
    });
    // A read that overlapped a change of the organization's knowledge is used once and not kept.
    this.sets.set(key, { corpus, expiresAt: Date.now() + this.ttlSeconds * 1000 });
    corpus.then(
      () => (this.generations.get(orgId) ?? 0) !== gen && this.sets.get(key)?.corpus === corpus && this.sets.delete(key),
      () => this.sets.get(key)?.corpus === corpus && this.sets.delete(key),
    );
    return corpus;
  }

  /**
   * Each text's distinct lexemes per configuration (db/repositories/knowledgeLexical.ts `queryLexemes`), the
   * pairs not held asked of Postgres in one statement.
   * @returns per text, configuration → lexemes
   */
  async lexemesOf(db: Db, configs: readonly string[], texts: readonly string[]): Promise<Array<Map<string, readonly string[]>>> {
    const out = texts.map(() => new Map<string, readonly string[]>());
    const missing: Array<{ config: string; text: string; i: number }> = [];
    texts.forEach((text, i) => {
      for (const config of configs) {
        const k = `${config}\n${text}`;
        const held = this.lexemes.get(k);
        if (held) {
          this.lexemes.delete(k); // most recently used last
          this.lexemes.set(k, held);
          out[i].set(config, held);
        } else missing.push({ config, text, i });
      }
    });
    if (missing.length) {
      const read = await queryLexemes(db, missing);
      missing.forEach((m, j) => {
        out[m.i].set(m.config, read[j]);
        if (this.lexemes.size >= MAX_LEXEME_ENTRIES) this.lexemes.delete(this.lexemes.keys().next().value as string);
        this.lexemes.set(`${m.config}\n${m.text}`, read[j]);
      });
    }
    return out;
  }
}
