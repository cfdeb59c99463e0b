/**
 * The labelled retrieval set (test/fixtures/retrieval/*.json: knowledge bases in English and Spanish, each question
 * with the chunk that answers it) and its measure: recall@1, recall@3 and mean reciprocal rank (MRR, over the top
 * 10) of the answering chunk (Manning, Raghavan & Schütze, "Introduction to Information Retrieval", §8). Used by
 * test/services/knowledge/retrieval.test.ts and the `retrieval` benchmark section.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Db } from '../../db';
import { createAgent } from '../../db/repositories/agents';
import { createSource, indexChunks, markProcessing } from '../../db/repositories/knowledge';
import { sourceTextSearchConfig } from '../../domain/knowledge/language';
import type { EmbeddingsProvider } from '../../providers/embeddings';
import { retrieveKnowledge } from '../../services/knowledge/retrieval';

/** One labelled question. */
export interface RetrievalQuestion {
  q: string;
  /** Key of the answering chunk in its knowledge base. */
  answer: string;
  /** `lexical`: shares words with its answer; `paraphrase`: hardly any; `context`: needs the earlier turns. */
  kind: 'lexical' | 'paraphrase' | 'context';
  /** Earlier user turns of the conversation, oldest first. */
  earlier?: string[];
}

/** One knowledge base of the set. */
export interface RetrievalKnowledgeBase {
  id: string;
  name: string;
  /** Expected text-search configuration of its chunks. */
  language: string;
  agentLanguage: string;
  chunks: Record<string, string>;
  questions: RetrievalQuestion[];
}

/** The set's knowledge bases, in file-name order. */
export function loadRetrievalSet(): RetrievalKnowledgeBase[] {
  const dir = path.join(__dirname, '..', 'fixtures', 'retrieval');
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as RetrievalKnowledgeBase);
}

/** A knowledge base stored for one agent: chunk key → chunk id. */
export interface SeededKnowledgeBase {
  kb: RetrievalKnowledgeBase;
  agentId: string;
  chunkIds: Map<string, string>;
  textSearchConfig: string;
}

/**
 * Stores each knowledge base as one ready source of its own agent, chunk per fixture entry, with the text-search
 * configuration ingestion would pick and, when `embeddings` makes vectors, the chunks' vectors.
 */
export async function seedRetrievalSet(db: Db, orgId: string, kbs: readonly RetrievalKnowledgeBase[], embeddings?: EmbeddingsProvider): Promise<SeededKnowledgeBase[]> {
  const out: SeededKnowledgeBase[] = [];
  for (const kb of kbs) {
    const agent = await createAgent(db, orgId, { name: `${kb.name} ${kb.id} ${Math.random().toString(36).slice(2, 8)}`, language: kb.agentLanguage } as any);
    const entries = Object.entries(kb.chunks);
    const source = await createSource(db, orgId, { agentId: agent.id, kind: 'text', name: kb.name, text: entries.map(([, t]) => t).join('\n\n') }, async () => undefined);
    await markProcessing(db, orgId, source.id);
    const textSearchConfig = sourceTextSearchConfig(entries.map(([, t]) => t).join('\n\n'), kb.agentLanguage);
    const chunks = entries.map(([, content], ordinal) => ({ ordinal, content }));
    const vectors = embeddings?.model ? { model: embeddings.model, vectors: await embeddings.embed(chunks.map((c) => c.content)) } : undefined;
    await indexChunks(db, orgId, source.id, chunks, undefined, { textSearchConfig, embeddings: vectors });
    const rows = await db('knowledge_chunks').where({ org_id: orgId, source_id: source.id }).select('id', 'ordinal');
    const byOrdinal = new Map(rows.map((r: any) => [r.ordinal as number, r.id as string]));
    out.push({ kb, agentId: agent.id, textSearchConfig, chunkIds: new Map(entries.map(([key], i) => [key, byOrdinal.get(i)!])) });
  }
  return out;
}

/** Recall@1, recall@3 and MRR@10 of one way of retrieving, with the count of questions. */
export interface RetrievalScores {
  questions: number;
  recallAt1: number;
  recallAt3: number;
  mrr: number;
  /** Per question kind. */
  byKind: Record<string, { questions: number; recallAt1: number }>;
}

/** How the set is queried. */
export type RetrievalMode =
  /** Full-text search on the last message only (retrieval before hybrid). */
  | 'full_text_last'
  /** Full-text search over the recent turns, fused (no vectors). */
  | 'full_text'
  /** Full-text and vector rankings fused. */
  | 'hybrid';

/** A provider that makes no vectors: the lexical path. */
const LEXICAL: EmbeddingsProvider = { name: 'lexical', model: null, embed: async () => [] };

/**
 * Asks every question of the set against its agent and scores the answering chunk's rank.
 * @param embeddings the provider of `hybrid` (ignored otherwise)
 * @param latencies when given, each retrieval's duration in ms is pushed onto it
 */
export async function scoreRetrieval(db: Db, orgId: string, seeded: readonly SeededKnowledgeBase[], mode: RetrievalMode, embeddings?: EmbeddingsProvider, latencies?: number[]): Promise<RetrievalScores> {
  let n = 0;
  let r1 = 0;
  let r3 = 0;
  let rr = 0;
  const byKind: RetrievalScores['byKind'] = {};
  for (const s of seeded) {
    for (const q of s.kb.questions) {
      const t0 = performance.now();
      const hits = await retrieveKnowledge(
        { db, embeddings: mode === 'hybrid' ? embeddings : LEXICAL },
        orgId,
        s.agentId,
        { text: q.q, earlierUserTurns: mode === 'full_text_last' ? [] : q.earlier ?? [] },
        10,
      );
      latencies?.push(performance.now() - t0);
      const rank = hits.findIndex((h) => h.chunkId === s.chunkIds.get(q.answer)) + 1;
      n++;
      if (rank === 1) r1++;
      if (rank >= 1 && rank <= 3) r3++;
      if (rank >= 1) rr += 1 / rank;
      const k = (byKind[q.kind] ??= { questions: 0, recallAt1: 0 });
      k.questions++;
      if (rank === 1) k.recallAt1++;
    }
  }
  for (const k of Object.values(byKind)) k.recallAt1 = round(k.recallAt1 / k.questions);
  return { questions: n, recallAt1: round(r1 / n), recallAt3: round(r3 / n), mrr: round(rr / n), byKind };
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/** The scores as a table, one row per mode. */
export function formatScores(rows: Record<string, RetrievalScores>): string {
  const lines = [`${'mode'.padEnd(28)} questions  recall@1  recall@3    MRR   recall@1 by kind`];
  for (const [name, s] of Object.entries(rows)) {
    const kinds = Object.entries(s.byKind)
      .map(([k, v]) => `${k} ${v.recallAt1.toFixed(2)} (${v.questions})`)
      .join(', ');
    lines.push(`${name.padEnd(28)} ${String(s.questions).padStart(9)}  ${s.recallAt1.toFixed(3).padStart(8)}  ${s.recallAt3.toFixed(3).padStart(8)}  ${s.mrr.toFixed(3).padStart(5)}   ${kinds}`);
  }
  return lines.join('\n');
}
