/**
 * Text extraction for knowledge ingestion (spec "Other endpoints": Knowledge): HTML (html-to-text), PDF (unpdf,
 * pdf.js), Markdown (marked → HTML → text) and plain text. Pure: bytes in, text out; no I/O besides
 * the libraries' own parsing, so the ingestion activity and the unit tests share it.
 */
import { convert } from 'html-to-text';
import { storableText } from '../text';
import { isTextType, looksBinary, looksLikeText, sniffMediaType } from '../mediaType';

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
  if (format !== 'pdf') await refuseBinaryText(input.bytes, input.contentType);
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

/**
 * Refuses bytes a text format cannot come from, whatever they were labelled (OWASP File Upload Cheat
 * Sheet: the declared type is not trusted): a binary signature (`file-type`: an executable, an archive, an
 * image …), or mostly control bytes / invalid UTF-8 when no other charset is declared (`looksBinary`).
 * @throws UnsupportedContentError
 */
export async function refuseBinaryText(bytes: Buffer, contentType?: string | null): Promise<void> {
  const sniffed = await sniffMediaType(bytes);
  if (sniffed && !isTextType(sniffed)) {
    throw new UnsupportedContentError(`The content is ${sniffed}, not text${contentType ? ` (it was labelled ${contentType.split(';')[0].trim()})` : ''}`);
  }
  const charset = /charset="?([^";\s]+)"?/i.exec(contentType ?? '')?.[1]?.toLowerCase();
  const utf8 = !charset || charset === 'utf-8' || charset === 'utf8' || charset === 'us-ascii';
  if (looksBinary(bytes, utf8)) throw new UnsupportedContentError('The content is binary data, not text');
}

/** Why an uploaded file cannot be a knowledge source (docs/security.md "Uploads are what they say"), for a 415 answer. */
export interface KnowledgeFileProblem {
  /** `unsupported_media_type`: not a type knowledge takes; `content_type_mismatch`: the bytes are not what the type says. */
  code: 'unsupported_media_type' | 'content_type_mismatch';
  message: string;
}

/**
 * Checks an upload before it becomes a knowledge source: only the text-extractable types documented here
 * (HTML, PDF, Markdown, plain text, CSV, JSON, TSV) whose bytes are what they say (`file-type` signature,
 * then `looksBinary`). Judged on the file's head; ingestion checks the whole file again.
 * @param head the first bytes of the file (64 KiB are plenty)
 * @returns the problem, or undefined when the file may be taken
 */
export async function knowledgeFileProblem(head: Buffer, contentType: string | null, filename: string | null): Promise<KnowledgeFileProblem | undefined> {
  const declared = (contentType ?? '').split(';')[0].trim().toLowerCase() || 'application/octet-stream';
  let format: KnowledgeFormat;
  try {
    format = detectFormat(head, contentType, filename);
  } catch (err) {
    if (!(err instanceof UnsupportedContentError)) throw err;
    return { code: 'unsupported_media_type', message: `is ${declared}, which cannot be used as knowledge; use HTML, PDF, Markdown or plain text` };
  }
  const sniffed = await sniffMediaType(head);
  if (format === 'pdf') return sniffed === 'application/pdf' ? undefined : { code: 'content_type_mismatch', message: `is declared ${declared} but its bytes are ${sniffed ?? 'not a PDF'}` };
  if (sniffed && !isTextType(sniffed)) return { code: 'content_type_mismatch', message: `is declared ${declared} but its bytes are ${sniffed}` };
  const charset = /charset="?([^";\s]+)"?/i.exec(contentType ?? '')?.[1]?.toLowerCase();
  if (looksBinary(head, !charset || charset === 'utf-8' || charset === 'utf8' || charset === 'us-ascii')) {
    return { code: 'content_type_mismatch', message: `is declared ${declared} but its bytes are binary data` };
  }
  return undefined;
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
