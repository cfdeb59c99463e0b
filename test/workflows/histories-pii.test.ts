/**
 * Workflow histories hold identifiers, not personal data (DESIGN.md "Durable processes"): the Temporal UI shows
 * a history to whoever can open it. Every recorded history of the scenario tests (test/fixtures/histories, from
 * `npm run histories:record`) is scanned — every payload (inputs, results, signals, updates, heartbeat details,
 * memos, search attributes) and every failure message — for phone numbers and e-mail addresses, the personal data
 * the scenarios put in (contact lists, callers, texters, members, booking requests), and every JSON payload for
 * fields that carry what a person wrote, said or is called (message texts, transcripts, PINs, names).
 */
import { expect } from 'chai';
import { findPhoneNumbersInText } from 'libphonenumber-js';
import { loadRecordedHistories } from '../helpers/histories';

const EMAIL = /[\w.+-]+@[\w-]+(\.[\w-]+)+/g;
/**
 * Fields that hold what a person wrote, said or is called (message texts, transcripts, PINs, names, contact
 * details): a JSON payload of a history may name none of them with a text value, whatever the text.
 */
const PERSONAL_FIELDS = /^(body|content|text|transcript|pin|name|firstName|lastName|fullName|email|phone|e164|caller|callee|greeting|summary|say)$/i;

/** `field: value` for each personal field with a non-empty text value in a JSON payload `data`. */
function personalFields(data: Uint8Array): string[] {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(data).toString('utf8'));
  } catch {
    return [];
  }
  const found: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) {
        if (PERSONAL_FIELDS.test(k) && typeof x === 'string' && x.trim()) found.push(`${k}: ${x.slice(0, 60)}`);
        walk(x);
      }
  };
  walk(json);
  return found;
}

/** Every payload `data` of a history event (inputs, results, signals, updates, heartbeats, memos, attributes). */
function payloadData(value: unknown, out: Uint8Array[]): void {
  if (!value || typeof value !== 'object') return;
  if (Array.isArray(value)) return value.forEach((v) => payloadData(v, out));
  const o = value as Record<string, unknown>;
  if (o.data instanceof Uint8Array && 'metadata' in o) out.push(o.data);
  for (const v of Object.values(o)) payloadData(v, out);
}

/** Every string a history event carries, payload data decoded (JSON payloads are UTF-8 text). */
function stringsOf(value: unknown, path: string, out: { path: string; text: string }[]): void {
  if (value === null || value === undefined) return;
  if (typeof value === 'string') {
    out.push({ path, text: value });
    return;
  }
  if (value instanceof Uint8Array) {
    out.push({ path, text: Buffer.from(value).toString('utf8') });
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => stringsOf(v, `${path}[${i}]`, out));
    return;
  }
  if (typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      // The metadata names encodings (`json/plain`); identities, task queues and the worker's binary checksum
      // (`@temporalio/worker@1.24.0+…`) are ours, not people's.
      if (k === 'metadata' || k === 'identity' || k === 'taskQueue' || k === 'binaryChecksum') continue;
      stringsOf(v, `${path}.${k}`, out);
    }
  }
}

/** Phone numbers (any format libphonenumber-js recognises, US as the default region) and e-mail addresses in `text`. */
function personalData(text: string): string[] {
  const phones = findPhoneNumbersInText(text, 'US').map((p) => p.number.number);
  return [...phones, ...(text.match(EMAIL) ?? [])];
}

describe('personal data in workflow histories', () => {
  it('finds no phone number or e-mail address in any recorded history', () => {
    const recorded = loadRecordedHistories();
    expect(recorded.length).to.be.greaterThan(0);
    const found: string[] = [];
    for (const { entry, history } of recorded) {
      const strings: { path: string; text: string }[] = [];
      (history.events ?? []).forEach((e, i) => stringsOf(e, `event ${i + 1}`, strings));
      for (const s of strings) for (const hit of personalData(s.text)) found.push(`${entry.file} ${s.path}: ${hit}`);
    }
    expect(found).to.deep.equal([]);
  });

  it('finds no message text, transcript, PIN, name or contact field in any payload of a recorded history', () => {
    const found: string[] = [];
    for (const { entry, history } of loadRecordedHistories()) {
      const data: Uint8Array[] = [];
      (history.events ?? []).forEach((e) => payloadData(e, data));
      for (const d of data) for (const f of personalFields(d)) found.push(`${entry.file} ${f}`);
    }
    expect(found).to.deep.equal([]);
  });

  it('would find them: a phone number and an e-mail address in a payload are reported', () => {
    const payload = Buffer.from(JSON.stringify({ to: '+1 212 555 0142', email: 'sam.lee@example.com', id: 'att_123' }));
    const strings: { path: string; text: string }[] = [];
    stringsOf({ activityTaskCompletedEventAttributes: { result: { payloads: [{ metadata: { encoding: Buffer.from('json/plain') }, data: payload }] } } }, 'event', strings);
    expect(strings.flatMap((s) => personalData(s.text))).to.deep.equal(['+12125550142', 'sam.lee@example.com']);
    expect(personalFields(Buffer.from(JSON.stringify({ conversationId: 'cnv_1', turn: { content: 'My PIN is 4821' }, caller: { name: 'Sam Lee' } })))).to.deep.equal(['content: My PIN is 4821', 'name: Sam Lee']);
  });
});
