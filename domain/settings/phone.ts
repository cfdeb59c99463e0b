/**
 * A number's phone settings in effect on its calls (docs/voice.md "Phone settings on calls"; stored by
 * `PUT /numbers/{id}/settings`): the defaults of a number never saved, and what an inbound call gets —
 * the agent, or outside the business hours the after-hours action (a voicemail, a message and the
 * hang-up, or a transfer to an escalation destination) — and the recording notice spoken first.
 */
import type { PhoneSettings } from '../../schemas/types/settings';
import { isOpen } from './hours';

/** Settings of a number never saved: no voicemail, no recording, always open, calls go to the agent. */
export const DEFAULT_PHONE_SETTINGS: PhoneSettings = {
  voicemail: { enabled: false, greeting: null, transcribe: true, maxSeconds: 120 },
  recordingConsent: { mode: 'none', announcement: null },
  businessHours: { timeZone: 'UTC', hours: null, afterHours: 'agent', escalationDestinationId: null, afterHoursMessage: null },
};

/** Default notice of `recordingConsent.mode: announce` when none is given. */
export const DEFAULT_RECORDING_ANNOUNCEMENT = 'This call may be recorded for quality and training purposes.';

/** What a caller hears before the voicemail beep when the number's greeting is empty. */
export const DEFAULT_VOICEMAIL_GREETING = "Sorry, we can't take your call right now. Please leave a message after the beep.";

/** What `afterHours: message` says when the number names no message. */
export const DEFAULT_AFTER_HOURS_MESSAGE = "Thanks for calling. We're closed right now; please call back during our business hours. Goodbye.";

/** Stored settings with the defaults for missing members (settings saved before a member existed). */
export function effectivePhoneSettings(stored: Partial<PhoneSettings> | null | undefined): PhoneSettings {
  return {
    voicemail: { ...DEFAULT_PHONE_SETTINGS.voicemail, ...(stored?.voicemail ?? {}) },
    recordingConsent: { ...DEFAULT_PHONE_SETTINGS.recordingConsent, ...(stored?.recordingConsent ?? {}) },
    businessHours: { ...DEFAULT_PHONE_SETTINGS.businessHours, ...(stored?.businessHours ?? {}) },
  };
}

/** What an inbound call gets at `at`. */
export type InboundRouting =
  | { action: 'agent' }
  | { action: 'voicemail'; greeting: string; maxSeconds: number; transcribe: boolean }
  | { action: 'message'; message: string }
  | { action: 'escalation'; destinationId: string | null };

/** The routing of an inbound call by the number's business hours (the agent when open). */
export function inboundRouting(s: PhoneSettings, at: Date = new Date()): InboundRouting {
  const bh = s.businessHours;
  if (bh.afterHours === 'agent' || isOpen(bh.timeZone, bh.hours, at)) return { action: 'agent' };
  if (bh.afterHours === 'voicemail') return voicemailRouting(s);
  if (bh.afterHours === 'message') return { action: 'message', message: bh.afterHoursMessage?.trim() || DEFAULT_AFTER_HOURS_MESSAGE };
  return { action: 'escalation', destinationId: bh.escalationDestinationId };
}

/** Taking a message: the number's voicemail greeting and limits (used after hours and when a transfer finds nobody). */
export function voicemailRouting(s: PhoneSettings): { action: 'voicemail'; greeting: string; maxSeconds: number; transcribe: boolean } {
  return { action: 'voicemail', greeting: s.voicemail.greeting?.trim() || DEFAULT_VOICEMAIL_GREETING, maxSeconds: s.voicemail.maxSeconds, transcribe: s.voicemail.transcribe };
}

/** The notice spoken before the greeting: the announcement when calls are recorded (`announce` or `opt_in`), else null. */
export function recordingNotice(s: PhoneSettings): string | null {
  if (s.recordingConsent.mode === 'none') return null;
  return s.recordingConsent.announcement?.trim() || DEFAULT_RECORDING_ANNOUNCEMENT;
}
