/**
 * The sandbox mailer: records messages instead of sending them (docs/team-and-oauth.md "Team"). Addresses ending in
 * `@fail.example` are refused, as a real server refuses a mailbox, so the failure path can be tried.
 */
import type { Mailer, MailMessage } from './index';

/** Records every message it is given, newest last. */
export class SandboxMailer implements Mailer {
  readonly provider = 'sandbox';
  /** Messages "sent" by this process, oldest first. */
  readonly sent: MailMessage[] = [];

  /** Records the message. @throws Error for a recipient at `fail.example` (the documented magic domain) */
  async send(message: MailMessage): Promise<void> {
    if (/@fail\.example$/i.test(message.to)) throw new Error(`550 mailbox unavailable: ${message.to}`);
    this.sent.push({ ...message });
  }

  async close(): Promise<void> {}
}
