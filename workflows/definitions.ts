/**
 * Signals and queries of the service's workflows, in one module that clients (the API's handlers, the
 * provider-callback endpoint, tests) can import without loading workflow code (Temporal TypeScript SDK
 * "Define Signal" / "Define Query": shared definitions). Names are the wire names Temporal records.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { CarrierEvent } from '../domain/sms/carrierStatus';
import type { SmsRegistrationProgress } from '../schemas/types/sms';
import type { WebhookDeliveryProgress } from './webhookDelivery';
import type { WebhookReplayProgress } from './webhookReplay';

// 10DLC registration `sms-registration/{orgId}`

/** A carrier status report for this organization's brand or campaign (from the callback endpoint). */
export const carrierEventSignal = defineSignal<[CarrierEvent]>('carrierEvent');

/** Progress of the registration: step, status, carrier ids and facts. */
export const registrationProgressQuery = defineQuery<SmsRegistrationProgress>('progress');

// Outbound campaign `campaign/{campaignId}`

/** Stops claiming new attempts (dials in flight finish). */
export const pauseCampaignSignal = defineSignal('pause');

/** Claims again after a pause. */
export const resumeCampaignSignal = defineSignal('resume');

/** Ends the campaign: no new dials, undialed attempts cancelled. */
export const cancelCampaignSignal = defineSignal('cancel');

/** What the dialer is doing. */
export interface CampaignDialerProgress {
  paused: boolean;
  cancelled: boolean;
  inFlight: number;
  /** Dials started by this run. */
  dialsThisRun: number;
  /** Runs so far (continue-as-new count + 1). */
  run: number;
}
/** The dialer's progress. */
export const campaignProgressQuery = defineQuery<CampaignDialerProgress>('progress');

// Knowledge ingestion `knowledge-source/{sourceId}`

/** Where the ingestion is. */
export type IngestionStage = 'starting' | 'extracting' | 'indexing' | 'ready' | 'failed';

/** Query: the current stage (Temporal UI / CLI `workflow query`). */
export const ingestionStageQuery = defineQuery<IngestionStage>('ingestionStage');

// Webhook delivery `webhook-delivery/{deliveryId}`

/** Query: the run's progress. */
export const webhookDeliveryProgressQuery = defineQuery<WebhookDeliveryProgress>('webhookDeliveryProgress');

/** A place among the attempts in flight was freed for this delivery's deferred attempt: try it now (docs/operations.md "Fair sharing"). */
export const webhookPlaceFreeSignal = defineSignal('webhookPlaceFree');

// Webhook replay `webhook-replay/{replayId}`

/** Query: how far the replay is. */
export const webhookReplayProgressQuery = defineQuery<WebhookReplayProgress>('webhookReplayProgress');

// Phone call `voice-call/{callId}`

/** A carrier status callback of the call (docs/voice.md). */
export type CallStatusUpdate = { status: 'ringing' | 'answered' } | { status: 'completed'; durationSeconds: number } | { status: 'failed'; reason: string };

/** The carrier reported the call's progress. */
export const callStatusSignal = defineSignal<[CallStatusUpdate]>('callStatus');

// Knowledge re-embedding `knowledge-reembed/{orgId}` (docs/knowledge.md "Changing the embeddings model")

/** Progress of a re-embedding: target model, chunks of the organization, chunks embedded, and whether it switched. */
export const reembedProgressQuery = defineQuery<{ model: string | null; total: number; done: number; status: 'embedding' | 'complete' }>('progress');
