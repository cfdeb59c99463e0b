/**
 * SMS segments (3GPP TS 23.038 GSM 7-bit default alphabet and its extension table; TS 23.040 concatenated
 * messages with a 6-byte user data header): a text in GSM-7 fits 160 septets in one segment, 153 per
 * segment when concatenated; any character outside GSM-7 makes the whole text UCS-2, 70 characters in one
 * segment, 67 per segment when concatenated. Extension characters (`^{}\[~]|€` and form feed) cost two septets.
 */

const GSM7_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM7_EXTENSION = '\f^{}\\[~]|€';
const BASIC = new Set(GSM7_BASIC);
const EXTENSION = new Set(GSM7_EXTENSION);

/** How a text is encoded and what it costs. */
export interface SegmentCount {
  encoding: 'GSM-7' | 'UCS-2';
  /** Segments the network bills (1 for an empty text). */
  segments: number;
  /** Length in the encoding's units: septets (GSM-7) or UTF-16 code units (UCS-2). */
  units: number;
}

/** Septets of a GSM-7 text, or null when a character is outside the alphabet. */
function gsm7Septets(text: string): number | null {
  let n = 0;
  for (const ch of text) {
    if (BASIC.has(ch)) n += 1;
    else if (EXTENSION.has(ch)) n += 2;
    else return null;
  }
  return n;
}

/** The encoding and number of segments of a text (3GPP TS 23.038 / 23.040). */
export function countSegments(text: string): SegmentCount {
  const septets = gsm7Septets(text);
  if (septets !== null) return { encoding: 'GSM-7', units: septets, segments: septets <= 160 ? 1 : Math.ceil(septets / 153) };
  const units = text.length; // UTF-16 code units: a character outside the BMP takes two, as on the air interface
  return { encoding: 'UCS-2', units, segments: units <= 70 ? 1 : Math.ceil(units / 67) };
}

/**
 * The longest prefix of `text` that fits `maxSegments`, cut at the end of a sentence (`.`, `!`, `?`, `…`
 * followed by a space or the end) when there is one, else at a word boundary followed by `...` (GSM-7 has no `…`).
 * @param maxSegments at least 1
 * @returns the text unchanged when it fits
 */
export function fitToSegments(text: string, maxSegments: number): string {
  const limit = Math.max(1, Math.floor(maxSegments));
  const trimmed = text.trim();
  if (countSegments(trimmed).segments <= limit) return trimmed;
  const sentences = trimmed.match(/[^.!?…]+(?:[.!?…]+["')\]]*|$)\s*/g) ?? [trimmed];
  let out = '';
  for (const s of sentences) {
    const next = out + s;
    if (countSegments(next.trim()).segments > limit) break;
    out = next;
  }
  if (out.trim()) return out.trim();
  // Not even the first sentence fits: cut it at a word boundary and mark the cut.
  const words = trimmed.split(/\s+/);
  out = '';
  for (const w of words) {
    const next = out ? `${out} ${w}` : w;
    if (countSegments(`${next}...`).segments > limit) break;
    out = next;
  }
  if (!out) {
    // One word longer than the limit: cut by characters.
    for (const ch of trimmed) {
      if (countSegments(`${out}${ch}...`).segments > limit) break;
      out += ch;
    }
  }
  return `${out}...`;
}
