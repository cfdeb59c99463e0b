/**
 * The one price table (docs/api-notes.md "Billing": prices). Every `recordUsage` caller takes its unit price
 * from here (db/repositories/usage.ts FEES, services/conversations/service.ts CONVERSATION_FEES), and
 * `GET /billing/usage` shows each entry's unit price. Sandbox prices in US cents.
 */

/** Price of one usage kind. */
export interface Price {
  /** The `kind` of the usage entries it prices, e.g. `conversation_message`. */
  kind: string;
  /** Price of one unit in US cents (0 = included). */
  unitPriceCents: number;
  /** What one unit is, e.g. `registration`, `reply`, `token`. */
  unit: string;
  description: string;
}

/** Every priced usage kind (docs/api-notes.md "Billing" lists the same table). */
export const PRICES = {
  brandRegistration: { kind: '10dlc_brand_registration', unitPriceCents: 400, unit: 'registration', description: 'TCR brand registration, once per 10DLC registration' },
  campaignVetting: { kind: '10dlc_campaign_vetting', unitPriceCents: 1500, unit: 'registration', description: '10DLC campaign vetting, once per registration' },
  numberPurchase: { kind: 'phone_number_purchase', unitPriceCents: 115, unit: 'number', description: 'A US long-code number purchase (first month)' },
  conversationMessage: { kind: 'conversation_message', unitPriceCents: 1, unit: 'reply', description: 'One agent reply in a conversation' },
  voiceMinutes: { kind: 'voice_minutes', unitPriceCents: 2, unit: 'minute', description: 'A connected minute of a phone call, each call rounded up to whole minutes' },
  smsSegments: { kind: 'sms_segments', unitPriceCents: 1, unit: 'segment', description: "One SMS segment of an agent's reply to a text (GSM-7 153 / UCS-2 67 characters per concatenated segment)" },
  llmTokens: { kind: 'llm_tokens', unitPriceCents: 0, unit: 'token', description: "LLM tokens of a turn or of a conversation's analysis; included in the message price on the sandbox plan" },
} as const satisfies Record<string, Price>;

const BY_KIND = new Map<string, Price>(Object.values(PRICES).map((p) => [p.kind, p]));

/** The price of a usage kind, or undefined for a kind the table does not list. */
export function priceOf(kind: string): Price | undefined {
  return BY_KIND.get(kind);
}

/**
 * Amount in whole cents of `quantity` units at `unitPriceCents` (rounded half up; a negative total is
 * not possible: quantities and prices are non-negative).
 */
export function amountFor(unitPriceCents: number, quantity: number): number {
  return Math.round(unitPriceCents * quantity);
}

/** A usage entry's kind and amount for one unit of `price` (the fee constants of recordUsage callers). */
export function feeOf(price: Price): { kind: string; amountCents: number } {
  return { kind: price.kind, amountCents: price.unitPriceCents };
}
