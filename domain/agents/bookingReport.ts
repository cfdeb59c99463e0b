/**
 * The pre-publish report's booking section (spec "Agent versions": the pre-publish report; docs/api-notes.md "Booking
 * skills"): per `book_appointment` and `check_availability` skill, what it will really do — the endpoint or the
 * connected calendar, the data it sends, the time cap — and a warning when its target did not answer when the report
 * was built (services/conversations/booking.ts `probeBookingTargets`).
 */
import type { ReportWarning } from '../../schemas/types/prepublish';
import type { CompiledAgent } from './compile';
import { skillType } from './skillTypes';

/** A probe's result as the report reads it. */
export interface BookingProbe {
  skill: string;
  target: string;
  reachable: boolean;
  detail: string | null;
}

const CALENDARS: Record<string, string> = { google_calendar: 'Google Calendar', calcom: 'Cal.com' };

/** The sentences and warnings of the booking skills of `snapshot`; a skill without a probe is described, not flagged. */
export function bookingReport(snapshot: CompiledAgent, probes: readonly BookingProbe[]): { willSay: string[]; warnings: ReportWarning[] } {
  const willSay: string[] = [];
  const warnings: ReportWarning[] = [];
  for (const s of snapshot.skills) {
    if (s.type !== 'book_appointment' && s.type !== 'check_availability') continue;
    const c = s.config as Record<string, any>;
    const fields = skillType(s.type)!.dataFlow(c).fields;
    const where = c.integration
      ? `the connected ${CALENDARS[c.integration] ?? c.integration}${c.integration === 'calcom' ? ` (event type ${c.eventTypeId})` : ` (calendar ${c.calendarId ?? 'primary'})`}`
      : `POST ${c.url} (the ${s.type === 'book_appointment' ? 'booking' : 'availability'} contract${c.url ? `, at most ${c.timeoutMs ?? 10000} ms` : ''})`;
    willSay.push(
      s.type === 'book_appointment'
        ? `${s.name} books ${c.durationMinutes}-minute appointments (${c.timeZone}) through ${where}, sending ${fields.join(', ')} and the conversation id; when it fails the person hears that it could not be booked and is offered a person`
        : `${s.name} reads free ${c.durationMinutes}-minute slots (${c.timeZone}) from ${where}, sending ${fields.join(', ')}; when it fails no time is offered`,
    );
    const probe = probes.find((p) => p.skill === s.name);
    if (probe && !probe.reachable) {
      warnings.push({
        code: 'booking_target_unreachable',
        field: `skills[${s.name}].config.${c.integration ? 'integration' : 'url'}`,
        message: `${s.name} cannot reach ${c.integration ? CALENDARS[c.integration] ?? c.integration : c.url}: ${probe.detail ?? 'no answer'}. Published as is, every ${s.type === 'book_appointment' ? 'booking' : 'availability check'} fails (the person is offered a person instead).`,
      });
    }
  }
  return { willSay, warnings };
}
