/**
 * What a file's bytes are, against what it says it is (OWASP File Upload Cheat Sheet: "validate the
 * file type, don't trust the Content-Type header"; OWASP ASVS 4.0 V12.2.1). The type is sniffed from the
 * bytes with `file-type` (magic numbers; ESM-only, so loaded with a dynamic `import()` from this
 * CommonJS code, as `marked` and `unpdf` are). Pure: bytes in, verdict out.
 *
 * Rules (docs/security.md "Uploads are what they say"):
 * - a declared image, audio, video or PDF type must be what the bytes are (aliases and shared containers,
 *   such as `image/jpg` for `image/jpeg` or `audio/mp4` for an MP4 file, count as the same);
 * - bytes that are an image, audio, video or PDF must be declared as such (or left undeclared:
 *   `application/octet-stream` then takes the sniffed type);
 * - a declared text type (text/*, JSON, XML) must not hold a binary format (an executable, an archive …).
 */

/** A contradiction between the declared type and the bytes. */
export interface TypeMismatch {
  declared: string;
  /** What the bytes are (a media type), or a short description when no signature matched. */
  actual: string;
}

/** Types whose bytes must carry their own signature. */
const SIGNED_FAMILY = /^(image|audio|video)\/|^application\/pdf$/;

/** Different names of one type, to one name. */
const ALIASES: Record<string, string> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'image/x-png': 'image/png',
  'image/x-ms-bmp': 'image/bmp',
  'image/x-bmp': 'image/bmp',
  'image/vnd.microsoft.icon': 'image/x-icon',
  'image/tif': 'image/tiff',
  'image/heif': 'image/heic',
  'audio/mp3': 'audio/mpeg',
  'audio/x-mp3': 'audio/mpeg',
  'audio/mpeg3': 'audio/mpeg',
  'audio/x-mpeg': 'audio/mpeg',
  'audio/x-wav': 'audio/wav',
  'audio/wave': 'audio/wav',
  'audio/vnd.wave': 'audio/wav',
  'audio/x-flac': 'audio/flac',
  'audio/x-aiff': 'audio/aiff',
  'audio/m4a': 'audio/mp4',
  'audio/x-m4a': 'audio/mp4',
  'audio/aacp': 'audio/aac',
  'audio/x-aac': 'audio/aac',
  'video/x-m4v': 'video/mp4',
  'video/avi': 'video/vnd.avi',
  'video/x-msvideo': 'video/vnd.avi',
  'video/msvideo': 'video/vnd.avi',
  'application/x-pdf': 'application/pdf',
};

/** Containers that hold audio or video alike: the bytes cannot tell which the sender meant. */
const CONTAINERS: ReadonlyArray<ReadonlySet<string>> = [
  new Set(['audio/mp4', 'video/mp4', 'video/quicktime']),
  new Set(['audio/3gpp', 'video/3gpp', 'audio/3gpp2', 'video/3gpp2']),
  new Set(['audio/ogg', 'video/ogg', 'application/ogg', 'audio/opus']),
  new Set(['audio/webm', 'video/webm', 'video/x-matroska', 'audio/x-matroska']),
];

/** The media type's essence (RFC 9110 §8.3.1: type/subtype, lower case, no parameters), aliases resolved. */
export function mediaTypeEssence(type: string | null | undefined): string {
  const t = (type ?? '').split(';')[0].trim().toLowerCase();
  return ALIASES[t] ?? t;
}

/** True when the two essences name the same kind of file. */
function sameType(a: string, b: string): boolean {
  return a === b || CONTAINERS.some((g) => g.has(a) && g.has(b));
}

/** True for a type whose bytes are text (text/*, JSON, XML and their `+json`/`+xml` kin). */
export function isTextType(essence: string): boolean {
  return essence.startsWith('text/') || /^application\/([\w.-]+\+)?(json|xml)$/.test(essence) || essence === 'application/csv';
}

/**
 * The media type the bytes' signature says (`file-type`), or null when none matches (text, and formats
 * without a signature).
 */
export async function sniffMediaType(bytes: Uint8Array): Promise<string | null> {
  const { fileTypeFromBuffer } = await import('file-type');
  const found = await fileTypeFromBuffer(bytes).catch(() => undefined);
  return found ? mediaTypeEssence(found.mime) : null;
}

/**
 * Checks the declared type of uploaded bytes (rules in the module comment).
 * @param declared the declared media type (`application/octet-stream` or empty: undeclared)
 * @returns the type to store (the declared one, or the sniffed one for undeclared bytes) or the mismatch
 */
export async function checkDeclaredType(bytes: Uint8Array, declared: string): Promise<{ contentType: string } | { mismatch: TypeMismatch }> {
  const essence = mediaTypeEssence(declared);
  const sniffed = await sniffMediaType(bytes);
  if (!essence || essence === 'application/octet-stream') return { contentType: sniffed ?? 'application/octet-stream' };
  if (essence === 'image/svg+xml') {
    // SVG is XML text without a binary signature: it must at least be an <svg> document.
    const head = Buffer.from(bytes.subarray(0, 4096)).toString('utf8');
    const svg = (sniffed === null || sniffed === 'application/xml') && /<svg[\s>]/i.test(head);
    return svg ? { contentType: declared } : { mismatch: { declared: essence, actual: sniffed ?? 'not an SVG document' } };
  }
  if (SIGNED_FAMILY.test(essence)) {
    if (sniffed && sameType(essence, sniffed)) return { contentType: declared };
    return { mismatch: { declared: essence, actual: sniffed ?? describeUnsigned(bytes) } };
  }
  if (sniffed && SIGNED_FAMILY.test(sniffed)) return { mismatch: { declared: essence, actual: sniffed } };
  if (isTextType(essence) && sniffed && !isTextType(sniffed)) return { mismatch: { declared: essence, actual: sniffed } };
  return { contentType: declared };
}

/** True when the first 8 KB hold no NUL bytes and decode as UTF-8 (binary files fail one or the other). */
export function looksLikeText(bytes: Buffer): boolean {
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

/**
 * True when the bytes are binary data rather than text that carries some junk (documents hold a stray NUL
 * often enough): more than 10 % of the first 8 KB are NUL or C0 control bytes other than TAB, LF, VT, FF,
 * CR and ESC, or more than 10 % of its characters are not UTF-8. Judged on at least 32 bytes.
 * @param utf8 false when another charset was declared (UTF-16 text is full of NULs): nothing is judged then
 */
export function looksBinary(bytes: Buffer, utf8 = true): boolean {
  if (!utf8) return false;
  const sample = bytes.subarray(0, 8192);
  if (sample.length < 32) return false;
  let controls = 0;
  for (const b of sample) if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0b && b !== 0x0c && b !== 0x0d && b !== 0x1b) controls++;
  if (controls > sample.length / 10) return true;
  const text = new TextDecoder('utf-8').decode(sample.length === bytes.length ? sample : trimPartialUtf8(sample));
  let invalid = 0;
  for (const ch of text) if (ch === '\uFFFD') invalid++;
  return invalid > text.length / 10;
}

/** What bytes without a known signature look like, for a message. */
function describeUnsigned(bytes: Uint8Array): string {
  return looksLikeText(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) ? 'text' : 'unrecognized binary data';
}
