/**
 * Text extraction for knowledge ingestion (spec "Other endpoints": Knowledge): HTML (html-to-text), PDF (unpdf,
 * pdf.js), Markdown (marked → HTML → text) and plain text. Pure: bytes in, text out; no I/O besides
 * the libraries' own parsing, so the ingestion activity and the unit tests share it.
 */
import { convert } from 'html-to-text';
import { storableText } from '../text';

/** Formats the extractor understands. */
export type KnowledgeFormat = 'html' | 'pdf' | 'markdown' | 'text';

/** Extracted text of one document. */
export interface ExtractedDocument {
  format: KnowledgeFormat;
  /** Plain text, paragraphs separated by blank lines. */
  text: string;
  /** Title when the document names one (HTML `<title>`, first Markdown heading, PDF metadata). */
  title: string | null;
}

/** A document of a type the extractor does not handle (images, archives, office files…): never retried. */
export class UnsupportedContentError extends Error {
  readonly code = 'unsupported_content';
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedContentError';
  }
}

const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);
const MARKDOWN_TYPES = new Set(['text/markdown', 'text/x-markdown']);
const TEXT_TYPES = new Set(['text/plain', 'text/csv', 'application/json', 'text/tab-separated-values']);

/**
 * Decides the format from the declared media type, then the file name's extension, then the bytes
 * themselves (`%PDF-`, an HTML root element). `application/octet-stream` counts as undeclared.
 * @throws UnsupportedContentError when the type is declared and unsupported, or nothing matches
 */
export function detectFormat(bytes: Buffer, contentType?: string | null, filename?: string | null): KnowledgeFormat {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (HTML_TYPES.has(type)) return 'html';
  if (type === 'application/pdf') return 'pdf';
  if (MARKDOWN_TYPES.has(type)) return 'markdown';
  if (TEXT_TYPES.has(type)) {
    // Servers often label .md files text/plain.
    return /\.(md|markdown)$/i.test(filename ?? '') ? 'markdown' : 'text';
  }
  const ext = (filename ?? '').toLowerCase().match(/\.([a-z0-9]+)$/)?.[1];
  const byExt: Record<string, KnowledgeFormat> = { html: 'html', htm: 'html', xhtml: 'html', pdf: 'pdf', md: 'markdown', markdown: 'markdown', txt: 'text', text: 'text', csv: 'text' };
  const head = bytes.subarray(0, 1024).toString('latin1');
  if (head.startsWith('%PDF-')) return 'pdf';
  if (type && type !== 'application/octet-stream' && !type.startsWith('text/')) {
    throw new UnsupportedContentError(`Content of type ${type} cannot be used as knowledge; use HTML, PDF, Markdown or plain text`);
  }
  if (ext && byExt[ext]) return byExt[ext];
  if (/^\s*(<!doctype html|<html[\s>])/i.test(head)) return 'html';
  if (type.startsWith('text/')) return 'text';
  if (looksLikeText(bytes)) return 'text';
  throw new UnsupportedContentError('The content is not HTML, PDF, Markdown or plain text');
}

/** True when the first 8 KB hold no NUL bytes and decode as UTF-8 (binary files fail one or the other). */
function looksLikeText(bytes: Buffer): boolean {
  const sample = bytes.subarray(0, 8192);
  if (sample.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample.length === bytes.length ? sample : trimPartialUtf8(sample));
    return true;
  } catch {
    return false;
  }
}

/** Drops a UTF-8 sequence cut by the sample boundary. */
function trimPartialUtf8(b: Buffer): Buffer {
  let end = b.length;
  for (let i = 1; i <= 3 && end - i >= 0; i++) {
    const c = b[end - i];
    if ((c & 0xc0) === 0x80) continue;
    if (c >= 0xc0) end -= i;
    break;
  }
  return b.subarray(0, end);
}

/** Decodes text bytes with the declared charset (UTF-8 when absent or unknown); strips a BOM. */
export function decodeText(bytes: Buffer, contentType?: string | null): string {
  const charset = /charset="?([^";\s]+)"?/i.exec(contentType ?? '')?.[1];
  let decoder: InstanceType<typeof TextDecoder>;
  try {
    decoder = new TextDecoder(charset ?? 'utf-8');
  } catch {
    decoder = new TextDecoder('utf-8');
  }
  return decoder.decode(bytes).replace(/^\uFEFF/, '');
}

/** Tidies whitespace: CRLF → LF, trailing spaces dropped, at most one blank line between paragraphs. */
export function normalizeText(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[\t\f\v\u00a0 ]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** HTML → text: scripts, styles, navigation and images dropped; links keep their text only. */
export function htmlToText(html: string): string {
  return convert(html, {
    wordwrap: false,
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
      { selector: 'nav', format: 'skip' },
      { selector: 'script', format: 'skip' },
      { selector: 'style', format: 'skip' },
      { selector: 'noscript', format: 'skip' },
      { selector: 'svg', format: 'skip' },
      { selector: 'form', format: 'skip' },
      { selector: 'h1', options: { uppercase: false } },
      { selector: 'h2', options: { uppercase: false } },
      { selector: 'h3', options: { uppercase: false } },
      { selector: 'h4', options: { uppercase: false } },
      { selector: 'h5', options: { uppercase: false } },
      { selector: 'h6', options: { uppercase: false } },
      { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
    ],
  });
}

function decodeEntities(s: string): string {
  return convert(s, { wordwrap: false }).trim();
}

/**
 * Extracts the text of a document.
 * @param input.bytes raw content; input.contentType declared media type (may carry a charset);
 *   input.filename name or URL path, used when the type is missing or generic
 * @throws UnsupportedContentError for unsupported or unreadable content (a PDF pdf.js cannot parse,
 *   a scanned PDF without a text layer)
 */
export async function extractDocument(input: { bytes: Buffer; contentType?: string | null; filename?: string | null }): Promise<ExtractedDocument> {
  const doc = await extractAnyFormat(input);
  // Documents carry NUL bytes and broken UTF-16 often enough (PDF text layers, binary junk in text
  // files); Postgres stores neither, so NULs are dropped and broken UTF-16 becomes U+FFFD here rather
  // than failing the ingestion.
  const clean = (s: string) => storableText(s.replace(/\u0000/g, ''));
  return { ...doc, text: clean(doc.text), title: doc.title === null ? null : clean(doc.title) || null };
}

async function extractAnyFormat(input: { bytes: Buffer; contentType?: string | null; filename?: string | null }): Promise<ExtractedDocument> {
  const format = detectFormat(input.bytes, input.contentType, input.filename);
  switch (format) {
    case 'html': {
      const html = decodeText(input.bytes, input.contentType);
      const rawTitle = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1];
      const title = rawTitle ? decodeEntities(rawTitle) || null : null;
      return { format, text: normalizeText(htmlToText(html)), title };
    }
    case 'markdown': {
      const md = decodeText(input.bytes, input.contentType);
      const heading = /^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$/m.exec(md)?.[1] ?? null;
      // marked is ESM-only; loaded on first use.
      const { marked } = await import('marked');
      const html = await marked.parse(md, { async: true, gfm: true });
      return { format, text: normalizeText(htmlToText(html)), title: heading };
    }
    case 'pdf':
      return extractPdf(input.bytes);
    case 'text':
      return { format, text: normalizeText(decodeText(input.bytes, input.contentType)), title: null };
  }
}

async function extractPdf(bytes: Buffer): Promise<ExtractedDocument> {
  // unpdf ships a serverless pdf.js build; loaded lazily because it is large.
  const { getDocumentProxy, extractText, getMeta } = await import('unpdf');
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    pdf = await getDocumentProxy(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength).slice());
  } catch (err) {
    throw new UnsupportedContentError(`The PDF cannot be read: ${(err as Error).message}`);
  }
  try {
    const { text } = await extractText(pdf, { mergePages: false });
    let title: string | null = null;
    try {
      const meta = await getMeta(pdf);
      const t = (meta.info as Record<string, unknown> | undefined)?.Title;
      title = typeof t === 'string' && t.trim() ? t.trim() : null;
    } catch {
      title = null;
    }
    const pages = (Array.isArray(text) ? text : [text]).map((p) => normalizeText(p)).filter(Boolean);
    const joined = pages.join('\n\n');
    if (!joined) throw new UnsupportedContentError('The PDF has no text layer (scanned images are not read)');
    return { format: 'pdf', text: joined, title };
  } finally {
    await pdf.destroy().catch(() => undefined);
  }
}
