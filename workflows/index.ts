/**
 * The worker's workflowsPath: re-exports every workflow type (DESIGN.md "workflows/"). Workflow code is
 * deterministic: no I/O, no Date.now(), no random; side effects go through activities.
 */
export {};
export { webhookDelivery } from './webhookDelivery';
export { webhookReplay } from './webhookReplay';
export { knowledgeIngestionWorkflow } from './knowledgeIngestion';
export { knowledgeReembedWorkflow } from './knowledgeReembed';
export { knowledgeRefreshWorkflow } from './knowledgeRefresh';
export { agentPublishWorkflow } from './agentPublish';
export { smsRegistration } from './smsRegistration';
export { smsMessage } from './smsMessage';
export { smsReply } from './smsReply';
export { campaignDialer, contactImport } from './outboundCampaign';
export { agentSimulation } from './agentSimulation';
export { agentEval } from './agentEval';
export { billingMonth } from './billingMonth';
export { walletAutoRecharge } from './walletAutoRecharge';
export { reportExport } from './reportExport';
export { recordsSync } from './recordsSync';
export { voiceCall } from './voiceCall';
export { conversationAnalysis } from './conversationAnalysis';
export { analysisRun } from './analysisRun';
