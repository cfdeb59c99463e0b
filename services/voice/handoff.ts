/**
 * The campaign-call handoff (providers/telephony `CampaignCallHandoff`): how a carrier adapter that
 * drives answered calls itself (Telnyx Call Control) gives a campaign call to its agent — the call is
 * stored and its relay reference minted (services/voice/calls.ts), or the campaign's voicemail message
 * is stored with its conversation (services/voice/voicemail.ts). Composed with the dialing activities.
 */
import type { Db } from '../../db';
import type { CampaignCallHandoff } from '../../providers/telephony';
import { prepareCampaignCall, speechCarrierOf } from './calls';
import { carrierSpeech } from '../../domain/voice/carrierVoices';
import { campaignVoicemail, recordVoicemail } from './voicemail';

/**
 * The handoff of one deployment. @param apiBaseUrl the public base of the API (`…/api/v1`) whose
 * `wss` relay the carrier connects to
 */
export function campaignCallHandoff(db: Db, apiBaseUrl: string): CampaignCallHandoff {
  return {
    async connect(call) {
      const prepared = await prepareCampaignCall(db, apiBaseUrl, call);
      if (!prepared) return null;
      const language = prepared.language;
      const voice = language ? carrierSpeech(speechCarrierOf(call.provider), prepared.agent?.voice?.id, language).voice : null;
      return { callId: prepared.call.id, relayUrl: prepared.relayUrl, language, dtmfEnabled: prepared.dtmfEnabled, voice };
    },
    async leaveVoicemail(call) {
      // Voicemail drops are a campaign's (docs/voice.md "Voicemail"); a call placed by POST /calls leaves none.
      if (!call.campaignId) return null;
      const vm = await campaignVoicemail(db, call.orgId, call.campaignId, call.agentId);
      if (!vm) return null;
      await recordVoicemail(db, call, vm);
      return { message: vm.message, language: vm.language };
    },
  };
}
