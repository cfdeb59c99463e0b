/**
 * `npm run bench`: runs every benchmark section and prints its figures. `BENCH_ONLY=http,…` picks
 * sections. The dev server has its own script (`npm run bench:devserver`).
 */
import { runAgentsBench } from './agents';
import { runBillingBench } from './billing';
import { runRecordsBench } from './records';
import { runChatBench } from './chat';
import { runObserveBench } from './observe';
import { runHttpBench } from './http';
import { runKnowledgeBench } from './knowledge';
import { runRetrievalBench } from './retrieval';
import { runOutboundBench } from './outbound';
import { runSmsBench } from './sms';
import { runSmsRepliesBench } from './smsReplies';
import { runSettingsBench } from './settings';
import { runWebhooksBench } from './webhooks';
import { runOAuthBench } from './oauth';
import { runVoiceBench } from './voice';
import { runEvalsBench } from './evals';
import { runWorkerStartBench } from './workerStart';
import { runNoisyNeighbourBench } from './noisyNeighbour';
import { runWebhookOutboxBench } from './webhookOutbox';
import { runConsoleBench } from './console';
import { runBench } from './entry';

const SECTIONS: Record<string, () => Promise<void>> = {
  http: runHttpBench,
  webhooks: runWebhooksBench,
  agents: runAgentsBench,
  knowledge: runKnowledgeBench,
  retrieval: runRetrievalBench,
  sms: runSmsBench,
  'sms-replies': runSmsRepliesBench,
  outbound: runOutboundBench,
  chat: runChatBench,
  observe: runObserveBench,
  billing: runBillingBench,
  settings: runSettingsBench,
  oauth: runOAuthBench,
  records: runRecordsBench,
  voice: runVoiceBench,
  evals: runEvalsBench,
  'worker-start': runWorkerStartBench,
  'webhook-outbox': runWebhookOutboxBench,
  'noisy-neighbour': runNoisyNeighbourBench,
  console: runConsoleBench,
};

async function main(): Promise<void> {
  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
  for (const [name, run] of Object.entries(SECTIONS)) {
    if (only && !only.includes(name)) continue;
    console.log(`\n=== ${name} ===`);
    await run();
  }
}

runBench('npm run bench', main);
