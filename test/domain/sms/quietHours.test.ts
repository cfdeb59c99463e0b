/**
 * The recipient-local quiet-hours window (api/sms/quietHours.ts; spec "Limits": 8am to 9pm
 * recipient-local), with the zone from the NANP area code and the overlap where a code spans zones.
 */
import { expect } from 'chai';
import { insideWindow, quietHoursDecision, recipientZones } from '../../../domain/sms/quietHours';
import { areaCodeInfo, areaCodeOf, usAreaCodes } from '../../../domain/sms/nanp';

const at = (iso: string) => new Date(iso);
const decide = (to: string, iso: string) => {
  const d = quietHoursDecision(to, at(iso));
  return { allowed: d.allowed, sendAt: d.sendAt.toISOString() };
};

describe('quiet hours (quietHoursDecision)', () => {
  it('allows a text inside 8am–9pm recipient-local and returns the same instant', () => {
    // 10:00 in San Francisco (PST, UTC-8)
    expect(decide('+14155550123', '2026-11-23T18:00:00.000Z')).to.deep.equal({ allowed: true, sendAt: '2026-11-23T18:00:00.000Z' });
  });

  it('holds a text at 10pm recipient-local until 8am the next morning', () => {
    // 22:00 in New York (EST, UTC-5) → 08:00 EST = 13:00 UTC next day
    expect(decide('+12125550123', '2026-11-24T03:00:00.000Z')).to.deep.equal({ allowed: false, sendAt: '2026-11-24T13:00:00.000Z' });
  });

  it('holds a text at 6am recipient-local until 8am the same day', () => {
    expect(decide('+14155550123', '2026-11-23T14:00:00.000Z')).to.deep.equal({ allowed: false, sendAt: '2026-11-23T16:00:00.000Z' });
  });

  it('includes 8:00 and excludes 21:00 exactly', () => {
    expect(insideWindow('America/New_York', at('2026-11-23T13:00:00.000Z'))).to.equal(true); // 08:00 EST
    expect(insideWindow('America/New_York', at('2026-11-23T12:59:59.000Z'))).to.equal(false);
    expect(insideWindow('America/New_York', at('2026-11-24T01:59:00.000Z'))).to.equal(true); // 20:59 EST
    expect(insideWindow('America/New_York', at('2026-11-24T02:00:00.000Z'))).to.equal(false); // 21:00 EST
  });

  it('uses daylight time in summer and standard time in winter', () => {
    // 08:00 EDT = 12:00 UTC in July; 08:00 EST = 13:00 UTC in January
    expect(decide('+12125550123', '2026-07-15T11:30:00.000Z')).to.deep.equal({ allowed: false, sendAt: '2026-07-15T12:00:00.000Z' });
    expect(decide('+12125550123', '2026-01-15T12:30:00.000Z')).to.deep.equal({ allowed: false, sendAt: '2026-01-15T13:00:00.000Z' });
  });

  it('handles the spring-forward night: held from 1am EST to 8am EDT', () => {
    // 2026-03-08 01:00 EST = 06:00 UTC; clocks jump at 2am; 08:00 EDT = 12:00 UTC
    expect(decide('+12125550123', '2026-03-08T06:00:00.000Z')).to.deep.equal({ allowed: false, sendAt: '2026-03-08T12:00:00.000Z' });
  });

  it('keeps Arizona on MST all year (no daylight time)', () => {
    // July 14:30 UTC = 07:30 MST in Phoenix (it would be 08:30 in Denver)
    expect(decide('+16025550123', '2026-07-15T14:30:00.000Z')).to.deep.equal({ allowed: false, sendAt: '2026-07-15T15:00:00.000Z' });
  });

  it('uses Hawaii time for 808', () => {
    // 17:00 UTC = 07:00 HST
    expect(decide('+18085550123', '2026-11-23T17:00:00.000Z')).to.deep.equal({ allowed: false, sendAt: '2026-11-23T18:00:00.000Z' });
  });

  it('takes the overlap for an area code spanning Eastern and Central time (850, Florida panhandle)', () => {
    expect(recipientZones('+18505550123')).to.have.members(['America/New_York', 'America/Chicago']);
    // 13:30 UTC: 08:30 EST but 07:30 CST → wait for 08:00 CST = 14:00 UTC
    expect(decide('+18505550123', '2026-11-23T13:30:00.000Z')).to.deep.equal({ allowed: false, sendAt: '2026-11-23T14:00:00.000Z' });
    // 01:30 UTC: 20:30 EST, 19:30 CST → allowed
    expect(decide('+18505550123', '2026-11-24T01:30:00.000Z').allowed).to.equal(true);
    // 02:30 UTC: 21:30 EST (closed), 20:30 CST → held until 08:00 CST = 14:00 UTC
    expect(decide('+18505550123', '2026-11-24T02:30:00.000Z')).to.deep.equal({ allowed: false, sendAt: '2026-11-24T14:00:00.000Z' });
  });

  it('takes the overlap for Pacific and Mountain (208, Idaho) and Alaska with the Aleutians (907)', () => {
    // 15:30 UTC: 08:30 MST, 07:30 PST → 08:00 PST = 16:00 UTC
    expect(decide('+12085550123', '2026-11-23T15:30:00.000Z')).to.deep.equal({ allowed: false, sendAt: '2026-11-23T16:00:00.000Z' });
    // 04:30 UTC: 21:30 MST (closed) → next morning 08:00 PST = 16:00 UTC
    expect(decide('+12085550123', '2026-11-24T04:30:00.000Z')).to.deep.equal({ allowed: false, sendAt: '2026-11-24T16:00:00.000Z' });
    // Anchorage AKST UTC-9, Adak HST UTC-10: window overlap opens at 08:00 HST = 18:00 UTC
    expect(decide('+19075550123', '2026-11-23T17:30:00.000Z')).to.deep.equal({ allowed: false, sendAt: '2026-11-23T18:00:00.000Z' });
  });

  it('never returns a send time outside the window of any zone, for every area code and hour of a day', () => {
    for (const code of usAreaCodes()) {
      for (let h = 0; h < 24; h += 5) {
        const when = new Date(Date.UTC(2026, 10, 23, h, 17));
        const to = `+1${code}5550123`;
        const d = quietHoursDecision(to, when);
        expect(d.sendAt.getTime()).to.be.at.least(when.getTime());
        for (const z of d.zones) expect(insideWindow(z, d.sendAt), `${code} ${z} ${when.toISOString()}`).to.equal(true);
        expect(d.sendAt.getTime() - when.getTime()).to.be.below(36 * 3600_000);
      }
    }
  });

  it('uses the strictest overlap of every US zone for an unknown or non-geographic area code', () => {
    const zones = recipientZones('+18005550123');
    expect(zones).to.include.members(['America/New_York', 'Pacific/Honolulu']);
    // 15:00 UTC: 10:00 EST but 05:00 HST → wait for the last zone of the continental+Hawaii set
    const d = quietHoursDecision('+18005550123', at('2026-11-23T15:00:00.000Z'));
    expect(d.allowed).to.equal(false);
    for (const z of zones) expect(insideWindow(z, d.sendAt)).to.equal(true);
  });

  it('maps area codes to states and zones', () => {
    expect(areaCodeOf('+14155550123')).to.equal('415');
    expect(areaCodeOf('+4915112345678')).to.equal(undefined);
    expect(areaCodeInfo('415')).to.deep.equal({ areaCode: '415', state: 'CA', zones: ['America/Los_Angeles'] });
    expect(areaCodeInfo('604')).to.equal(undefined); // Vancouver, Canada
    expect(usAreaCodes().length).to.be.greaterThan(300);
  });
});
