/**
 * Generates compliant 10DLC campaign text from the brand details and use case (spec `saveSMSRegistration`:
 * "compliant campaign text and sample messages are auto-generated"). The wording follows carrier/TCR
 * vetting practice and the CTIA Messaging Principles: the brand is named, purpose and frequency are
 * stated, "Msg & data rates may apply", opt-out ("Reply STOP to opt out") and HELP are given, template
 * fields are marked in [brackets], and a sample carries the website link when the campaign sends links.
 */
import type { OptInMethod, SmsRegistrationDraft, UseCase } from '../../schemas/types/sms';

/** The five generated fields. */
export interface CampaignText {
  description: string;
  sample1: string;
  sample2: string;
  messageFlow: string;
  helpMessage: string;
}

/** Names of the generated fields, in response order. */
export const CAMPAIGN_TEXT_FIELDS: (keyof CampaignText)[] = ['description', 'sample1', 'sample2', 'messageFlow', 'helpMessage'];

interface UseCaseWording {
  /** "… sends <purpose> text messages" */
  purpose: string;
  frequency: string;
  sample1: string;
  sample2: string;
}

// [placeholders] are template fields filled per message.
const WORDING: Record<UseCase, UseCaseWording> = {
  '2FA': { purpose: 'one-time verification code', frequency: 'Message frequency varies by login activity', sample1: 'Your verification code is [code]. It expires in 10 minutes.', sample2: 'Use code [code] to finish signing in. Do not share this code with anyone.' },
  ACCOUNT_NOTIFICATION: { purpose: 'account notification', frequency: 'Message frequency varies', sample1: 'Hi [first_name], your account settings were updated on [date].', sample2: 'Hi [first_name], your statement for [month] is ready to view.' },
  CUSTOMER_CARE: { purpose: 'customer care', frequency: 'Message frequency varies', sample1: 'Hi [first_name], thanks for contacting us. Your ticket [ticket_id] is open and an agent will reply shortly.', sample2: 'Hi [first_name], your request [ticket_id] has been resolved. Reply to this message if you need more help.' },
  DELIVERY_NOTIFICATION: { purpose: 'delivery notification', frequency: 'Message frequency varies by order', sample1: 'Hi [first_name], your order [order_id] has shipped and should arrive on [date].', sample2: 'Your order [order_id] was delivered at [time].' },
  FRAUD_ALERT: { purpose: 'fraud alert', frequency: 'Message frequency varies', sample1: 'We noticed a charge of [amount] at [merchant] on your account ending [last4]. Reply YES if it was you or NO if not.', sample2: 'A new device signed in to your account on [date]. If this was not you, call [support_phone].' },
  HIGHER_EDUCATION: { purpose: 'campus and enrollment notification', frequency: 'Message frequency varies', sample1: 'Hi [first_name], registration for [term] opens on [date].', sample2: 'Reminder: your advising appointment is on [date] at [time].' },
  LOW_VOLUME: { purpose: 'low-volume customer notification', frequency: 'Up to 5 messages per month', sample1: 'Hi [first_name], your appointment is confirmed for [date] at [time].', sample2: 'Hi [first_name], a reminder that your visit is tomorrow at [time].' },
  MARKETING: { purpose: 'promotional offer', frequency: 'Up to 4 messages per month', sample1: 'Hi [first_name], save [percent]% on your next visit this week with code [promo_code].', sample2: 'New this month: [product]. Show this text for [offer].' },
  MIXED: { purpose: 'account notification and promotional', frequency: 'Message frequency varies', sample1: 'Hi [first_name], your appointment is confirmed for [date] at [time].', sample2: 'Hi [first_name], members save [percent]% this weekend with code [promo_code].' },
  POLLING_VOTING: { purpose: 'survey and polling', frequency: 'Message frequency varies', sample1: 'Hi [first_name], how would you rate your recent visit? Reply 1-5.', sample2: 'Thanks for your feedback, [first_name]! Your answers help us improve.' },
  PUBLIC_SERVICE_ANNOUNCEMENT: { purpose: 'public service announcement', frequency: 'Message frequency varies', sample1: 'Reminder: [event] takes place on [date] at [location].', sample2: 'Service update: [service] will be unavailable on [date] from [time].' },
  SECURITY_ALERT: { purpose: 'security alert', frequency: 'Message frequency varies', sample1: 'Security alert: your password was changed on [date]. If this was not you, contact support.', sample2: 'A sign-in from a new location ([city]) was detected on [date].' },
  SOLE_PROPRIETOR: { purpose: 'customer notification', frequency: 'Up to 5 messages per month', sample1: 'Hi [first_name], your appointment is confirmed for [date] at [time].', sample2: 'Hi [first_name], your order [order_id] is ready for pickup.' },
  AGENTS_FRANCHISES: { purpose: 'local agent and franchise', frequency: 'Message frequency varies', sample1: 'Hi [first_name], this is [agent_name]. Your policy review is scheduled for [date].', sample2: 'Hi [first_name], [agent_name] here: your documents are ready to sign.' },
  CHARITY: { purpose: 'donor and volunteer update', frequency: 'Up to 4 messages per month', sample1: 'Hi [first_name], thank you for your gift of [amount] on [date].', sample2: 'Volunteers needed on [date] at [location]. Reply YES to sign up.' },
  EMERGENCY: { purpose: 'emergency notification', frequency: 'Message frequency varies with events', sample1: 'Emergency notice: [event] in [area]. Follow instructions at [location].', sample2: 'Update: the [event] alert for [area] has ended.' },
  K12_EDUCATION: { purpose: 'school notification', frequency: 'Message frequency varies', sample1: 'Reminder: [school] is closed on [date] for [reason].', sample2: 'Hi [parent_name], [student_name] was marked absent on [date].' },
  POLITICAL: { purpose: 'political campaign update', frequency: 'Up to 8 messages per month', sample1: 'Hi [first_name], early voting in [county] starts [date].', sample2: 'Join us at [location] on [date] to meet the candidate.' },
  SOCIAL: { purpose: 'community update', frequency: 'Message frequency varies', sample1: 'Hi [first_name], [friend_name] invited you to [event] on [date].', sample2: 'New post in [group]: [title].' },
  SWEEPSTAKE: { purpose: 'sweepstakes', frequency: 'Up to 4 messages per month', sample1: 'Hi [first_name], you are entered in the [sweepstake] drawing on [date]. No purchase necessary.', sample2: 'Winners of [sweepstake] will be notified on [date]. Official rules: [rules_link].' },
};

const OPT_IN_WORDING: Record<OptInMethod, string> = {
  WEB_FORM: 'by entering their mobile number on the online form at [website] and checking an unchecked consent box',
  TEXT_KEYWORD: 'by texting the keyword [keyword] to [phone_number], as advertised on our website and in store',
  VERBAL: 'by giving verbal consent during a recorded phone call, after the agent reads the consent disclosure',
  PAPER_FORM: 'by writing their mobile number on a signed paper form and checking a consent box',
  MOBILE_APP: 'by entering their mobile number in our mobile app and checking an unchecked consent box',
  POINT_OF_SALE: 'by entering their mobile number at checkout and confirming consent on the payment terminal',
  QR_CODE: 'by scanning a QR code posted in store, which opens a pre-filled text with the keyword [keyword] that they send',
};

/**
 * Builds the five campaign-text fields from a merged draft. Pure and deterministic.
 * @param d the draft as it will be stored (brand details, use case, opt-in method, links flag)
 */
export function generateCampaignText(d: SmsRegistrationDraft): CampaignText {
  const brand = (d.displayName || d.legalName || '[brand_name]').trim();
  const w = WORDING[d.useCase ?? 'MIXED'] ?? WORDING.MIXED;
  const website = d.website || '[website]';
  const optIn = OPT_IN_WORDING[d.optInMethod ?? 'WEB_FORM'].replace('[website]', website);
  const contact = [d.supportEmail, d.phone].filter(Boolean).join(' or ') || website;
  const privacy = d.website ? `${d.website.replace(/\/+$/, '')}/privacy` : '[privacy_policy_url]';

  const description =
    `${brand} sends ${w.purpose} text messages to customers who have opted in to receive them. ` +
    `${w.frequency}. Msg & data rates may apply. Recipients can reply STOP to opt out and HELP for help at any time.`;
  const sample1 = `${brand}: ${w.sample1} Reply STOP to opt out.`;
  const link = d.sendsLinks ? ` Details: ${website}` : '';
  const sample2 = `${brand}: ${w.sample2}${link} Reply HELP for help, STOP to opt out.`;
  const messageFlow =
    `Customers opt in ${optIn}. The consent language names ${brand}, states the purpose (${w.purpose} messages), ` +
    `says "${w.frequency}. Msg & data rates may apply. Reply STOP to opt out, HELP for help." ` +
    `and links to the privacy policy at ${privacy}. Mobile opt-in data is never shared with third parties.`;
  const helpMessage = `${brand}: for help contact ${contact}. Msg & data rates may apply. Reply STOP to opt out.`;
  return { description, sample1, sample2, messageFlow, helpMessage: helpMessage.slice(0, 320) };
}
