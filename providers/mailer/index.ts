/**
 * The mailer interface (DESIGN.md "Providers": `mailer`, invitations; docs/team-and-oauth.md "Team"). The sandbox, the
 * default, records every message in memory; `MAILER_PROVIDER=smtp` sends through `nodemailer` to the SMTP
 * server named by `SMTP_URL` (e.g. `smtps://user:pass@smtp.example.com:465`), from `MAIL_FROM`.
 */
import { SandboxMailer } from './sandbox';
import { SmtpMailer } from './smtp';

/** One message to send (plain text; invitations need no HTML). */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/** A mailer adapter. */
export interface Mailer {
  readonly provider: string;
  /** Sends one message. @throws Error when the provider refuses it or cannot be reached */
  send(message: MailMessage): Promise<void>;
  /** Releases connections (SMTP pool); a no-op for the sandbox. */
  close(): Promise<void>;
}

/**
 * The configured mailer (MAILER_PROVIDER: `sandbox`, the default, or `smtp` with SMTP_URL and MAIL_FROM).
 * @throws Error for another provider name, or `smtp` without SMTP_URL
 */
export function createMailer(env: NodeJS.ProcessEnv = process.env): Mailer {
  const name = env.MAILER_PROVIDER || 'sandbox';
  if (name === 'sandbox') return new SandboxMailer();
  if (name === 'smtp') {
    if (!env.SMTP_URL) throw new Error('MAILER_PROVIDER=smtp needs SMTP_URL (e.g. smtps://user:pass@smtp.example.com:465)');
    return new SmtpMailer(env.SMTP_URL, env.MAIL_FROM || 'no-reply@localhost');
  }
  throw new Error(`MAILER_PROVIDER=${name} is not supported; use "sandbox" or "smtp"`);
}
