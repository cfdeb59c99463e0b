/**
 * Knowledge benchmark (docs/benchmarks.md): ingestion throughput in MB/s through extract + chunk + index (the
 * real activities, per format: HTML, PDF, Markdown, plain text), and `POST /agents/{id}/knowledge/preview`
 * latency (p50/p95/p99 over the real API) with 100,000 chunks indexed for the agent.
 *
 * Run: `npx tsx bench/knowledge.ts` (embedded Postgres unless DATABASE_URL names a server).
 * BENCH_CHUNKS (default 100000) and BENCH_QUERIES (default 1000) scale it down or up.
 */
import os from 'node:os';
import PDFDocument from 'pdfkit';
import type { Db } from '../db';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { createAgent } from '../db/repositories/agents';
import { createSource, indexChunks, markProcessing, searchChunks } from '../db/repositories/knowledge';
import { createUpload } from '../db/repositories/uploads';
import { createKnowledgeActivities } from '../activities/knowledge';
import { startApi } from '../api/server';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { loadConfig } from '../config';
import { createLogger } from '../runtime';
import { runBench } from './entry';
import { openBenchDatabase } from './harness';
import { seededRandom } from '../test/helpers/random';

const TOTAL_CHUNKS = Number(process.env.BENCH_CHUNKS ?? 100_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 1000);
const CHUNKS_PER_SOURCE = 1000;

const rand = seededRandom(42);
const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'tas', 'vo', 'pel', 'dri', 'sun', 'bar', 'qui', 'nor', 'fe', 'gal', 'hu', 'zet', 'mar', 'cle', 'ost', 'wen'];
/** Postgres's English stop words: as in real text, they take the most frequent ranks (and are not indexed). */
const STOP_WORDS = (
  'the of and to a in is it you that he was for on are with as his they be at have this from or had by but ' +
  'what some we can were all there when your which their if will each about how up out them then she many ' +
  'so these her would other into has more him could no than been who its now did down only over very ' +
  'just our most should because while any both before after again those through same such here where why'
).split(' ');
/**
 * Vocabulary: the stop words, then 20,000 pseudo-words, drawn with a Zipf distribution (rank r with
 * weight 1/r): the most common content word lands in about one chunk in ten, as a domain's common
 * words do (e.g. "appointment" in a clinic's FAQ), and a long tail of rare ones.
 */
const VOCAB = [...STOP_WORDS, ...Array.from({ length: 20_000 }, (_, i) => {
  let w = '';
  let n = i + 7;
  do {
    w += SYLLABLES[n % SYLLABLES.length];
    n = Math.floor(n / SYLLABLES.length);
  } while (n > 0);
  return w;
})];
const ZIPF_CDF = (() => {
  const weights = VOCAB.map((_, i) => 1 / (i + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  let acc = 0;
  return weights.map((w) => (acc += w / total));
})();
function word(): string {
  const r = rand();
  let lo = 0;
  let hi = ZIPF_CDF.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ZIPF_CDF[mid] < r) lo = mid + 1;
    else hi = mid;
  }
  return VOCAB[lo];
}
function sentence(): string {
  const n = 8 + Math.floor(rand() * 12);
  const words = Array.from({ length: n }, word);
  words[0] = words[0][0].toUpperCase() + words[0].slice(1);
  return `${words.join(' ')}.`;
}
function paragraph(): string {
  return Array.from({ length: 3 + Math.floor(rand() * 5) }, sentence).join(' ');
}
function document(chars: number): string[] {
  const paras: string[] = [];
  let len = 0;
  while (len < chars) {
    const p = paragraph();
    paras.push(p);
    len += p.length + 2;
  }
  return paras;
}

async function makePdf(paras: string[]): Promise<Buffer> {
  const doc = new PDFDocument({ autoFirstPage: true });
  const parts: Buffer[] = [];
  doc.on('data', (b: Buffer) => parts.push(b));
  const done = new Promise<void>((r) => doc.on('end', () => r()));
  for (const p of paras) doc.fontSize(10).text(p).moveDown();
  doc.end();
  await done;
  return Buffer.concat(parts);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function ingestionSection(db: Db, orgId: string, agentId: string): Promise<void> {
  const acts = createKnowledgeActivities({ db, config: loadConfig({ logLevel: 'silent' }), logger: createLogger('silent') });
  const docs: { format: string; name: string; type: string; data: Buffer }[] = [];
  for (let i = 0; i < 20; i++) {
    const paras = document(100_000);
    const html = `<!doctype html><html><head><title>Doc ${i}</title><style>p{margin:0}</style></head><body><nav><a href="/">Home</a></nav><main>${paras.map((p) => `<p>${p}</p>`).join('\n')}</main></body></html>`;
    docs.push({ format: 'html', name: `page${i}.html`, type: 'text/html', data: Buffer.from(html) });
  }
  for (let i = 0; i < 20; i++) {
    const paras = document(100_000);
    docs.push({ format: 'markdown', name: `doc${i}.md`, type: 'text/markdown', data: Buffer.from(paras.map((p, j) => (j % 10 === 0 ? `## Section ${j}\n\n${p}` : p)).join('\n\n')) });
    docs.push({ format: 'text', name: `doc${i}.txt`, type: 'text/plain', data: Buffer.from(document(100_000).join('\n\n')) });
  }
  for (let i = 0; i < 5; i++) {
    docs.push({ format: 'pdf', name: `doc${i}.pdf`, type: 'application/pdf', data: await makePdf(document(60_000)) });
  }
  const byFormat = new Map<string, { bytes: number; chars: number; chunks: number; ms: number }>();
  for (const d of docs) {
    const upload = await createUpload(db, orgId, { filename: d.name, contentType: d.type, data: d.data });
    const src = await createSource(db, orgId, { agentId, kind: 'file', fileId: upload.id }, async () => undefined);
    const ref = { orgId, sourceId: src.id };
    const t0 = performance.now();
    await acts.startKnowledgeIngestion(ref);
    const { charCount } = await acts.extractKnowledgeSource(ref);
    const { chunkCount } = await acts.indexKnowledgeSource(ref);
    const ms = performance.now() - t0;
    const f = byFormat.get(d.format) ?? { bytes: 0, chars: 0, chunks: 0, ms: 0 };
    f.bytes += d.data.length;
    f.chars += charCount;
    f.chunks += chunkCount;
    f.ms += ms;
    byFormat.set(d.format, f);
  }
  console.log('ingestion throughput (extract + chunk + index, sequential, one activity chain per document):');
  console.log('  format     docs   input MB   text MB   chunks   seconds   MB/s (input)   chunks/s');
  let all = { bytes: 0, ms: 0, chunks: 0 };
  for (const [format, f] of byFormat) {
    const n = docs.filter((d) => d.format === format).length;
    console.log(
      `  ${format.padEnd(9)} ${String(n).padStart(5)} ${(f.bytes / 1e6).toFixed(2).padStart(10)} ${(f.chars / 1e6).toFixed(2).padStart(9)} ${String(f.chunks).padStart(8)} ${(f.ms / 1000).toFixed(2).padStart(9)} ${(f.bytes / 1e6 / (f.ms / 1000)).toFixed(2).padStart(14)} ${Math.round(f.chunks / (f.ms / 1000)).toString().padStart(10)}`,
    );
    all = { bytes: all.bytes + f.bytes, ms: all.ms + f.ms, chunks: all.chunks + f.chunks };
  }
  console.log(`  overall: ${(all.bytes / 1e6).toFixed(2)} MB in ${(all.ms / 1000).toFixed(2)} s = ${(all.bytes / 1e6 / (all.ms / 1000)).toFixed(2)} MB/s, ${all.chunks} chunks`);
}

async function previewSection(db: Db, orgId: string, agentId: string, key: string, baseUrl: string): Promise<void> {
  const sources = Math.ceil(TOTAL_CHUNKS / CHUNKS_PER_SOURCE);
  const t0 = performance.now();
  let inserted = 0;
  const work = Array.from({ length: sources }, (_, i) => i);
  // Two writers: one per core; the tsvector is computed by Postgres on insert (generated column).
  await Promise.all(
    [0, 1].map(async () => {
      for (let i = work.shift(); i !== undefined; i = work.shift()) {
        const n = Math.min(CHUNKS_PER_SOURCE, TOTAL_CHUNKS - i * CHUNKS_PER_SOURCE);
        const src = await createSource(db, orgId, { agentId, kind: 'text', text: `synthetic ${i}` }, async () => undefined);
        await markProcessing(db, orgId, src.id);
        const chunks = Array.from({ length: n }, (_, j) => {
          let c = '';
          while (c.length < 650) c += (c ? ' ' : '') + sentence();
          return { ordinal: j, content: c };
        });
        const stored = (await indexChunks(db, orgId, src.id, chunks)) ?? 0;
        inserted += stored;
      }
    }),
  );
  await db.raw('ANALYZE knowledge_chunks');
  console.log(`indexed ${inserted} synthetic chunks (~650-800 chars, Zipf vocabulary: stop words + 20,000 words) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  // Queries: 2-5 words from the same distribution plus stop words, as a caller's question would be.
  const questions = Array.from({ length: QUERIES }, () => {
    const words = Array.from({ length: 2 + Math.floor(rand() * 4) }, word);
    return `what is the ${words.join(' and ')}?`;
  });
  for (const q of questions.slice(0, 20)) await searchChunks(db, orgId, agentId, q, 5); // warm-up

  const dbTimes: number[] = [];
  for (const q of questions.slice(0, Math.min(200, questions.length))) {
    const s = performance.now();
    await searchChunks(db, orgId, agentId, q, 5);
    dbTimes.push(performance.now() - s);
  }
  const apiTimes: number[] = [];
  let empty = 0;
  for (const q of questions) {
    const s = performance.now();
    const res = await fetch(`${baseUrl}/agents/${agentId}/knowledge/preview`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: q, limit: 5 }),
    });
    const body = (await res.json()) as { data?: { results: unknown[] } };
    apiTimes.push(performance.now() - s);
    if (res.status !== 200) throw new Error(`preview answered ${res.status}`);
    if (!body.data?.results.length) empty++;
  }
  for (const [name, times] of [['POST /knowledge/preview (HTTP, sequential)', apiTimes], ['searchChunks (repository only)', dbTimes]] as const) {
    const sorted = [...times].sort((a, b) => a - b);
    console.log(
      `${name}: ${times.length} queries over ${inserted} chunks: p50 ${percentile(sorted, 50).toFixed(1)} ms, p95 ${percentile(sorted, 95).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, max ${sorted[sorted.length - 1].toFixed(1)} ms`,
    );
  }
  console.log(`queries with no hit: ${empty} of ${QUERIES}`);
}

/** Runs both sections and prints their figures. */
export async function runKnowledgeBench(): Promise<void> {
  const started = performance.now();
  const { db, databaseUrl, close: closeDatabase } = await openBenchDatabase('knowledge', { serverUrl: process.env.DATABASE_URL });
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', rateLimitPoints: 1_000_000_000 });
  try {
    const orgId = (await createOrganization(db, 'Bench Org')).id;
    const key = (await createSecretKey(db, orgId, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES })).key;
    const ingestAgent = (await createAgent(db, orgId, { name: 'Ingestion bench' })).id;
    const previewAgent = (await createAgent(db, orgId, { name: 'Preview bench' })).id;
    await ingestionSection(db, orgId, ingestAgent);
    const api = await startApi({ db, databaseUrl, config, logger: createLogger('silent') });
    try {
      await previewSection(db, orgId, previewAgent, key, api.baseUrl);
    } finally {
      await api.close();
    }
  } finally {
    await closeDatabase();
  }
  console.log(`(knowledge bench took ${((performance.now() - started) / 1000).toFixed(1)} s; ${os.cpus().length} CPUs)`);
}

if (require.main === module) runBench('bench knowledge', runKnowledgeBench);
