/**
 * The SMS area (spec "SMS" rows): one module per part, each exporting its handlers and the schemas of
 * its operations; api/routes/index.ts gathers them by operationId.
 */
import * as registration from './registration';
import * as consent from './consent';
import * as numbers from './numbers';
import * as messages from './messages';
import * as callbacks from './callbacks';
import * as media from './media';

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = {
  getSMSRegistration: registration.getSMSRegistration,
  saveSMSRegistration: registration.saveSMSRegistration,
  reviewSMSRegistration: registration.reviewSMSRegistration,
  submitSMSRegistration: registration.submitSMSRegistration,
  recordSMSConsent: consent.recordSMSConsent,
  withdrawSMSConsent: consent.withdrawSMSConsent,
  listSMSContacts: consent.listSMSContacts,
  listSMSOptOuts: consent.listSMSOptOuts,
  exportSMSConsent: consent.exportSMSConsent,
  listSMSNumbers: numbers.listSMSNumbers,
  setNumberSMS: numbers.setNumberSMS,
  sendSMSMessage: messages.sendSMSMessage,
  receiveSMSProviderCallback: callbacks.receiveSMSProviderCallback,
  getSMSMedia: media.getSMSMedia,
  getSMSMediaContent: media.getSMSMediaContent,
};

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  ...registration.routeSchemas,
  ...consent.routeSchemas,
  ...numbers.routeSchemas,
  ...messages.routeSchemas,
  ...callbacks.routeSchemas,
  ...media.routeSchemas,
};
