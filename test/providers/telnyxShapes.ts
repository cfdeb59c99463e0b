/**
 * The request, response and webhook shapes of the Telnyx calls the adapters make, as the official
 * `telnyx` SDK declares them (generated from Telnyx's OpenAPI document); test/providers/wire.ts turns
 * each export into a JSON Schema that the loopback stub validates against.
 */
import type * as BrandNs from 'telnyx/resources/messaging-10dlc/brand/brand';
import type * as CampaignNs from 'telnyx/resources/messaging-10dlc/campaign/campaign';
import type * as BuilderNs from 'telnyx/resources/messaging-10dlc/campaign-builder/campaign-builder';
import type * as PncNs from 'telnyx/resources/messaging-10dlc/phone-number-campaigns';
import type * as AvailableNs from 'telnyx/resources/available-phone-numbers';
import type * as OrdersNs from 'telnyx/resources/number-orders';
import type * as MessagesNs from 'telnyx/resources/messages/messages';
import type * as CallsNs from 'telnyx/resources/calls/calls';
import type * as CallActionsNs from 'telnyx/resources/calls/actions';
import type * as BalanceNs from 'telnyx/resources/balance';
import type * as WebhooksNs from 'telnyx/resources/webhooks';

export type WireBrandCreateParams = BrandNs.BrandCreateParams;
export type WireBrandUpdateParams = BrandNs.BrandUpdateParams;
export type WireTelnyxBrand = BrandNs.TelnyxBrand;
export type WireBrandRetrieveResponse = BrandNs.BrandRetrieveResponse;
export type WireBrandListResponse = BrandNs.BrandListResponse;
export type WireCampaignBuilderSubmitParams = BuilderNs.CampaignBuilderSubmitParams;
export type WireTelnyxCampaignCsp = CampaignNs.TelnyxCampaignCsp;
export type WireCampaignListResponse = CampaignNs.CampaignListResponse;
export type WirePhoneNumberCampaignCreateParams = PncNs.PhoneNumberCampaignCreateParams;
export type WirePhoneNumberCampaign = PncNs.PhoneNumberCampaign;
export type WireAvailablePhoneNumberListResponse = AvailableNs.AvailablePhoneNumberListResponse;
export type WireNumberOrderCreateParams = OrdersNs.NumberOrderCreateParams;
export type WireNumberOrderCreateResponse = OrdersNs.NumberOrderCreateResponse;
export type WireNumberOrderListResponse = OrdersNs.NumberOrderListResponse;
export type WireMessageSendParams = MessagesNs.MessageSendParams;
export type WireMessageSendResponse = MessagesNs.MessageSendResponse;
export type WireCallDialParams = CallsNs.CallDialParams;
export type WireCallDialResponse = CallsNs.CallDialResponse;
export type WireActionStartConversationRelayParams = CallActionsNs.ActionStartConversationRelayParams;
export type WireActionStartConversationRelayResponse = CallActionsNs.ActionStartConversationRelayResponse;
export type WireActionHangupParams = CallActionsNs.ActionHangupParams;
export type WireActionSpeakParams = CallActionsNs.ActionSpeakParams;
export type WireActionSpeakResponse = CallActionsNs.ActionSpeakResponse;
export type WireActionHangupResponse = CallActionsNs.ActionHangupResponse;
export type WireActionTransferParams = CallActionsNs.ActionTransferParams;
export type WireActionTransferResponse = CallActionsNs.ActionTransferResponse;
export type WireBalanceRetrieveResponse = BalanceNs.BalanceRetrieveResponse;
export type WireCampaignStatusUpdate = WebhooksNs.CampaignStatusUpdate;
export type WireInboundMessageWebhookEvent = WebhooksNs.InboundMessageWebhookEvent;
export type WireDeliveryUpdateWebhookEvent = WebhooksNs.DeliveryUpdateWebhookEvent;
export type WireCallInitiatedWebhookEvent = WebhooksNs.CallInitiatedWebhookEvent;
export type WireCallAnsweredWebhookEvent = WebhooksNs.CallAnsweredWebhookEvent;
export type WireCallMachineDetectionEndedWebhookEvent = WebhooksNs.CallMachineDetectionEndedWebhookEvent;
export type WireCallHangupWebhookEvent = WebhooksNs.CallHangupWebhookEvent;
export type WireCallMachineGreetingEndedWebhookEvent = WebhooksNs.CallMachineGreetingEndedWebhookEvent;
export type WireCallSpeakStartedWebhookEvent = WebhooksNs.CallSpeakStartedWebhookEvent;
export type WireCallSpeakEndedWebhookEvent = WebhooksNs.CallSpeakEndedWebhookEvent;
