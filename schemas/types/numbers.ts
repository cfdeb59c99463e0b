/**
 * Numbers request and response types (spec "Numbers": search, reserve, purchase, assign; fields "not
 * shown", decided in docs/sms.md "Numbers, consent and sending"). Numbers are US long codes from the telephony provider.
 */

/** A number offered by the telephony provider (`GET /numbers/search`). */
export interface AvailableNumber {
  /** E.164, e.g. `+14155550123`. */
  e164: string;
  /** NANP area code (NPA), e.g. `415`. */
  areaCode: string;
  /** Two-letter state of the area code. */
  region: string;
  capabilities: { sms: boolean; voice: boolean; mms: boolean };
  /** Monthly price in US cents. */
  monthlyPriceCents: number;
}

/** A page of available numbers. */
export interface AvailableNumberPage {
  items: AvailableNumber[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** A number reserved or owned by the organization. */
export interface PhoneNumber {
  /** `num_…` */
  id: string;
  e164: string;
  /** reserved: held for 15 minutes; purchased: owned (billed monthly). */
  status: 'reserved' | 'purchased';
  /** End of the reservation. @format date-time */
  reservedUntil: string | null;
  /** @format date-time */
  purchasedAt: string | null;
  /** Agent answering the number. */
  agentId: string | null;
  smsEnabled: boolean;
  /** @format date-time */
  createdAt: string;
}

/**
 * Request body of `POST /numbers/reserve` (operation reserveNumber).
 * @additionalProperties false
 */
export interface NumberReserveRequest {
  /** A number from the search results. @maxLength 20 */
  e164: string;
}

/**
 * Request body of `POST /numbers/purchase` (operation purchaseNumber): either a reservation id or a number.
 * @additionalProperties false
 */
export interface NumberPurchaseRequest {
  /** Id of the organization's reservation, `num_…`. @maxLength 64 */
  id?: string;
  /** A number from the search results (reserved and purchased at once). @maxLength 20 */
  e164?: string;
}

/**
 * Request body of `POST /numbers/{id}/assign` (operation assignNumber).
 * @additionalProperties false
 */
export interface NumberAssignRequest {
  /** Agent id (`agt_…`), or null to unassign. @maxLength 64 */
  agentId: string | null;
}

/** A page of the organization's numbers (`GET /numbers`). */
export interface PhoneNumberPage {
  items: PhoneNumber[];
  nextCursor: string | null;
  hasMore: boolean;
}
