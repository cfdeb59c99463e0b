/**
 * Time arithmetic of the booking skills (domain/booking/slots.ts; docs/api-notes.md "Booking skills"): local times
 * with the zone's offset (DST included, from Intl's time zone data), the day window of `check_availability`, and the
 * free slots inside opening hours around busy intervals.
 */
import { expect } from 'chai';
import { availabilityWindow, freeSlots, localIso, zonedInstant, DEFAULT_OPEN_HOURS } from '../../../domain/booking/slots';

describe('booking slots (domain/booking/slots.ts)', () => {
  it('writes an instant as local time with the offset of that date, across a DST change', () => {
    expect(localIso(Date.parse('2026-12-03T16:00:00Z'), 'America/Chicago')).to.equal('2026-12-03T10:00:00-06:00');
    expect(localIso(Date.parse('2026-07-03T15:00:00Z'), 'America/Chicago')).to.equal('2026-07-03T10:00:00-05:00');
    expect(localIso(Date.parse('2026-12-03T16:00:00Z'), 'Asia/Kolkata')).to.equal('2026-12-03T21:30:00+05:30');
    // 2026-03-08 02:30 does not exist in Chicago; 09:00 that day is CDT.
    expect(new Date(zonedInstant('2026-03-08', '09:00', 'America/Chicago')).toISOString()).to.equal('2026-03-08T14:00:00.000Z');
  });

  it('looks at the whole local day asked (never before now), or the next windowDays', () => {
    const now = Date.parse('2026-11-29T12:00:00Z');
    expect(availabilityWindow('2026-12-03', 'America/Chicago', now, 7)).to.deep.equal({ fromMs: Date.parse('2026-12-03T06:00:00Z'), toMs: Date.parse('2026-12-04T06:00:00Z') });
    expect(availabilityWindow('2026-11-29', 'America/Chicago', now, 7)!.fromMs).to.equal(now);
    expect(availabilityWindow(undefined, 'UTC', now, 2)).to.deep.equal({ fromMs: now, toMs: now + 2 * 86_400_000 });
    expect(availabilityWindow('next tuesday', 'UTC', now, 7)).to.equal(null);
  });

  it('offers back-to-back slots inside opening hours on open days, minus every busy overlap, at most max', () => {
    const from = Date.parse('2026-12-03T06:00:00Z');
    const to = Date.parse('2026-12-06T06:00:00Z'); // Thursday to Saturday in Chicago
    const busy = [{ start: '2026-12-03T15:30:00Z', end: '2026-12-03T16:10:00Z' }];
    const slots = freeSlots(from, to, 'America/Chicago', 60, DEFAULT_OPEN_HOURS, busy, 20);
    expect(slots[0]).to.deep.equal({ start: '2026-12-03T17:00:00.000Z', end: '2026-12-03T18:00:00.000Z' });
    expect(slots.filter((s) => s.start.startsWith('2026-12-03'))).to.have.length(6);
    expect(slots.some((s) => s.start.startsWith('2026-12-05') || s.start.startsWith('2026-12-06')), 'Saturday is closed').to.equal(false);
    expect(slots).to.have.length(14);
    expect(freeSlots(from, to, 'America/Chicago', 60, DEFAULT_OPEN_HOURS, busy, 3)).to.have.length(3);
  });
});
