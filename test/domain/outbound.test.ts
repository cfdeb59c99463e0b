/**
 * Pure outbound logic (docs/voice.md "Outbound voice campaigns"): the recipient-local calling window, scrub rules, CSV errors and the
 * campaign state machine.
 */
import { expect } from 'chai';
import { nextDialTime, windowProblems, zonesFor, DEFAULT_WINDOW } from '../../domain/outbound/callingWindow';
import { normalizeUsPhone, scrubRow } from '../../domain/outbound/scrub';
import { checkContactCsv, CsvFormatError } from '../../domain/outbound/csv';
import { nextStatus } from '../../domain/outbound/stateMachine';

const none = { suppressed: new Set<string>(), doNotCall: new Set<string>(), consented: new Set<string>() };

describe('outbound calling window', () => {
  it('waits until 8am in the recipient zone and allows a dial inside the window at once', () => {
    const at = new Date('2026-11-23T12:30:00Z'); // 7:30 EST
    expect(nextDialTime(['America/New_York'], at)!.toISOString()).to.equal('2026-11-23T13:00:00.000Z');
    expect(nextDialTime(['America/Los_Angeles'], at)!.toISOString()).to.equal('2026-11-23T16:00:00.000Z');
    const noon = new Date('2026-11-23T17:00:00Z');
    expect(nextDialTime(['America/Chicago'], noon)).to.equal(noon);
  });

  it('takes the overlap of every zone of an area code that spans a zone line', () => {
    const zones = zonesFor('+18505550123', null); // Florida panhandle: Eastern and Central
    expect(zones).to.have.members(['America/New_York', 'America/Chicago']);
    // 8:00 Eastern is 7:00 Central: the overlap opens at 8:00 Central.
    expect(nextDialTime(zones, new Date('2026-11-23T12:30:00Z'))!.toISOString()).to.equal('2026-11-23T14:00:00.000Z');
    // 20:30 Eastern is past 21:00? no, but 20:30 Central is 21:30 Eastern: closed until the next morning.
    expect(nextDialTime(zones, new Date('2026-11-24T02:30:00Z'))!.toISOString()).to.equal('2026-11-24T14:00:00.000Z');
  });

  it('prefers the explicit zone of the contact over the area code', () => {
    expect(zonesFor('+12125550123', 'America/Denver')).to.deep.equal(['America/Denver']);
    expect(zonesFor('+12125550123', null)).to.deep.equal(['America/New_York']);
  });

  it('honours a narrowed window and the days of the week, across a daylight-saving change', () => {
    const w = { startMinutes: 10 * 60, endMinutes: 17 * 60, days: ['mon' as const] };
    // Saturday 2026-03-07 noon Eastern → Monday 2026-03-09 10:00 EDT (clocks sprang forward on Sunday).
    expect(nextDialTime(['America/New_York'], new Date('2026-03-07T17:00:00Z'), w)!.toISOString()).to.equal('2026-03-09T14:00:00.000Z');
    expect(nextDialTime(['America/New_York'], new Date('2026-03-09T21:30:00Z'), w)!.toISOString()).to.equal('2026-03-16T14:00:00.000Z');
  });

  it('refuses a window wider than 08:00–21:00 and an empty one', () => {
    expect(windowProblems({ start: '08:00', end: '21:00' })).to.deep.equal([]);
    expect(windowProblems({ start: '07:59', end: '21:00' }).map((p) => p.field)).to.deep.equal(['callingWindow.start']);
    expect(windowProblems({ start: '09:00', end: '21:01' }).map((p) => p.field)).to.deep.equal(['callingWindow.end']);
    expect(windowProblems({ start: '12:00', end: '12:00' }).map((p) => p.field)).to.deep.equal(['callingWindow.end']);
    expect(DEFAULT_WINDOW.days).to.have.length(7);
  });
});

describe('outbound scrub rules', () => {
  it('normalizes national and formatted numbers to E.164 and refuses non-US ones', () => {
    expect(normalizeUsPhone('(415) 555-2671')).to.deep.equal({ e164: '+14155552671' });
    expect(normalizeUsPhone('1-212-300-1000')).to.deep.equal({ e164: '+12123001000' });
    expect(normalizeUsPhone('+44 20 7946 0958')).to.deep.equal({ reason: 'not_us' });
    expect(normalizeUsPhone('+1 613 555 0101')).to.deep.equal({ reason: 'not_us' }); // Ottawa, Canada
    expect(normalizeUsPhone('12345')).to.deep.equal({ reason: 'invalid_phone' });
  });

  it('applies duplicate, suppression, do-not-call and consent rules in order', () => {
    const seen = new Set<string>();
    const a = '+12123001000';
    expect(scrubRow({ phone: a, timeZone: null }, 'informational', seen, none).outcome).to.equal('accepted');
    expect(scrubRow({ phone: a, timeZone: null }, 'informational', seen, none).outcome).to.equal('duplicate');
    expect(scrubRow({ phone: '+12123001001', timeZone: null }, 'informational', seen, { ...none, suppressed: new Set(['+12123001001']) }).outcome).to.equal('suppressed');
    expect(scrubRow({ phone: '+12123001002', timeZone: null }, 'informational', seen, { ...none, doNotCall: new Set(['+12123001002']) }).outcome).to.equal('do_not_call');
    expect(scrubRow({ phone: '+12123001003', timeZone: null }, 'marketing', seen, none).outcome).to.equal('no_consent');
    expect(scrubRow({ phone: '+12123001004', timeZone: null }, 'marketing', seen, { ...none, consented: new Set(['+12123001004']) }).outcome).to.equal('accepted');
    expect(scrubRow({ phone: '+12123001005', timeZone: 'Nowhere/Town' }, 'informational', seen, none).outcome).to.equal('invalid_time_zone');
  });
});

describe('outbound CSV reading', () => {
  it('names the row, column and line of an unclosed quote', async () => {
    const err = await checkContactCsv(Buffer.from('phone,name\n+12123001000,"Ada\n')).catch((e) => e);
    expect(err).to.be.instanceOf(CsvFormatError);
    expect(err.message).to.match(/^row 1, column 2 \(name\), line 2: Quote Not Closed/);
    expect(err).to.include({ row: 1, column: 2, line: 2 });
  });

  it('refuses a NUL character, which Postgres cannot store, naming the cell', async () => {
    const err = await checkContactCsv(Buffer.from('phone,first_name\n+12123001000,Ada\n+12123001001,Gr\u0000ace\n')).catch((e) => e);
    expect(err).to.be.instanceOf(CsvFormatError);
    expect(err.message).to.equal('row 2, column 2 (first_name): contains a NUL character (U+0000)');
    expect(err).to.include({ row: 2, column: 2 });
    const header = await checkContactCsv(Buffer.from('phone,no\u0000te\n+12123001000,x\n')).catch((e) => e);
    expect(header).to.be.instanceOf(CsvFormatError);
    expect(header).to.include({ row: 0, column: 2 });
  });

  it('counts data rows and skips blank lines', async () => {
    expect(await checkContactCsv(Buffer.from('\uFEFFphone\n+12123001000\n\n+12123001001\n'))).to.equal(2);
  });
});

describe('campaign state machine', () => {
  it('allows draft → running ⇄ paused → completed | cancelled and nothing else', () => {
    expect(nextStatus('draft', 'launch')).to.equal('running');
    expect(nextStatus('running', 'pause')).to.equal('paused');
    expect(nextStatus('paused', 'resume')).to.equal('running');
    expect(nextStatus('running', 'complete')).to.equal('completed');
    expect(nextStatus('paused', 'cancel')).to.equal('cancelled');
    expect(nextStatus('draft', 'cancel')).to.equal('cancelled');
    expect(nextStatus('paused', 'launch')).to.equal(undefined);
    expect(nextStatus('completed', 'cancel')).to.equal(undefined);
    expect(nextStatus('cancelled', 'resume')).to.equal(undefined);
    expect(nextStatus('paused', 'complete')).to.equal(undefined);
  });
});
