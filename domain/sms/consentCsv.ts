/**
 * The proof-of-consent export as CSV (RFC 4180; docs/sms.md "Numbers, consent and sending"): one row per
 * consent event, spreadsheet formulas neutralised (OWASP "CSV Injection").
 */

/** One consent event as exported. */
export interface ConsentCsvEvent {
  e164: string;
  event: string;
  source: string | null;
  occurredAt: string;
  recordedAt: string;
  proofText: string | null;
}

/**
 * One CSV field (RFC 4180). Free text (`freeText` true) that a spreadsheet would run as a formula
 * (leading = + - @ tab CR) is prefixed with `'` (OWASP CSV injection); validated values such as
 * E.164 numbers and timestamps are written as they are.
 */
export function csvField(v: string | null, freeText = true): string {
  if (v === null) return '';
  const safe = freeText && /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** The CSV document: a header line, then one CRLF-terminated line per event. */
export function consentCsv(events: ConsentCsvEvent[]): string {
  const lines = ['e164,event,source,occurredAt,recordedAt,proofText'];
  for (const e of events) {
    lines.push([csvField(e.e164, false), csvField(e.event, false), csvField(e.source), csvField(e.occurredAt, false), csvField(e.recordedAt, false), csvField(e.proofText)].join(','));
  }
  return lines.join('\r\n') + '\r\n';
}
