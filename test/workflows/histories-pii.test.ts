/**
 * Workflow histories hold identifiers, not personal data (DESIGN.md "Durable processes"): the Temporal UI shows
 * a history to whoever can open it. Every recorded history of the scenario tests (test/fixtures/histories, from
 * `npm run histories:record`) is scanned — every payload (inputs, results, signals, updates, heartbeat details,
 * memos, search attributes) and every failure message — for phone numbers and e-mail addresses, the personal data
 * the scenarios put in (contact lists, callers, texters, members, booking requests).
 */
import { expect } from 'chai';
import { findPhoneNumbersInText } from 'libphonenumber-js';
import { loadRecordedHistories } from '../helpers/histories';

const EMAIL = /[\w.+-]+@[\w-]+(\.[\w-]+)+/g;

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

  it('would find them: a phone number and an e-mail address in a payload are reported', () => {
    const payload = Buffer.from(JSON.stringify({ to: '+1 212 555 0142', email: 'sam.lee@example.com', id: 'att_123' }));
    const strings: { path: string; text: string }[] = [];
    stringsOf({ activityTaskCompletedEventAttributes: { result: { payloads: [{ metadata: { encoding: Buffer.from('json/plain') }, data: payload }] } } }, 'event', strings);
    expect(strings.flatMap((s) => personalData(s.text))).to.deep.equal(['+12125550142', 'sam.lee@example.com']);
  });
});
