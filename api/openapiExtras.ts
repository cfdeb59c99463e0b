/**
 * What the OpenAPI document carries beyond the route table (docs/api-notes.md "Reference, landing page and
 * index"): the webhook event catalogue as OpenAPI 3.1 top-level `webhooks` (OpenAPI 3.1.0 §4.8.1: one
 * Path Item per event type, whose POST body is what an endpoint receives), and `examples` for the main
 * operations (OpenAPI 3.1.0 §4.8.14 Media Type Object). A test validates every example against its schema.
 */
import { EVENT_CATALOG } from '../domain/webhooks/catalog';

/** Request and response examples of one operation, by example name. */
export interface OperationExamples {
  request?: Record<string, { summary: string; value: unknown }>;
  /** Examples of `data` in the success envelope. */
  response?: Record<string, { summary: string; value: unknown }>;
}

/** Examples of the main operations, by operationId. */
export const OPERATION_EXAMPLES: Record<string, OperationExamples> = {
  createAgent: {
    request: {
      receptionist: {
        summary: 'A receptionist that answers calls and chats',
        value: {
          name: 'Front desk',
          description: 'Answers the main line and the website chat',
          persona: 'You are Ava, the friendly receptionist of Bright Dental in Austin.',
          instructions: 'Answer questions about opening hours and services. Offer to book an appointment. Never give medical advice.',
          greeting: 'Thanks for calling Bright Dental, this is Ava. How can I help?',
          language: 'en-US',
          voiceId: 'voice_ava',
          timeZone: 'America/Chicago',
        },
      },
    },
  },
  publishAgent: {
    request: { note: { summary: 'Publish the draft with a note', value: { note: 'Opening hours for the holidays' } } },
    response: {
      published: {
        summary: 'The new frozen version, now live',
        value: {
          id: 'ver_3kT9wQm2LbX7',
          agentId: 'agt_8fJ2kLmN4pQr',
          number: 4,
          note: 'Opening hours for the holidays',
          publishedBy: 'key_Zx81LmQp2wRt',
          draftVersion: 12,
          isPublished: true,
          checksum: '9f2c1a4b7e3d5f6a8b0c2d4e6f8a0b1c3d5e7f9a1b2c4d6e8f0a1b3c5d7e9f1a',
          createdAt: '2026-11-26T14:05:00Z',
        },
      },
    },
  },
  createChatSession: {
    request: {
      published: { summary: 'Talk to the published version', value: { agentId: 'agt_8fJ2kLmN4pQr', variables: { customerName: 'Dana' } } },
      draft: { summary: 'Try the current draft', value: { agentId: 'agt_8fJ2kLmN4pQr', draftMode: true } },
    },
  },
  sendChatMessage: {
    request: { question: { summary: 'A user message', value: { content: 'Are you open on Saturday?' } } },
  },
  createChatCompletion: {
    request: {
      completion: {
        summary: 'OpenAI-compatible: the model is the agent (optionally @draft or @v<n>)',
        value: { model: 'agt_8fJ2kLmN4pQr', messages: [{ role: 'user', content: 'Are you open on Saturday?' }], stream: false },
      },
      streamed: {
        summary: 'Streamed as Server-Sent Events, with usage in the last chunk',
        value: { model: 'agt_8fJ2kLmN4pQr@draft', messages: [{ role: 'user', content: 'Hello' }], stream: true, stream_options: { include_usage: true } },
      },
    },
  },
  sendSMSMessage: {
    request: {
      text: { summary: 'A text from the organization’s number (held to 8am–9pm recipient-local time)', value: { from: '+15125550100', to: '+15125550199', body: 'Your appointment is confirmed for Monday at 9:30.' } },
      reply: { summary: 'A reply to an inbound text (not held)', value: { from: '+15125550100', to: '+15125550199', body: 'Yes, we are open on Saturday from 9 to 1.', trigger: 'reply' } },
    },
    response: {
      queued: {
        summary: 'Accepted: queued for sending',
        value: { id: 'msg_5hG7jK9lM2nP', direction: 'outbound', trigger: 'agent', from: '+15125550100', to: '+15125550199', status: 'queued', heldUntil: null, error: null, mediaIds: [], createdAt: '2026-11-26T14:05:00Z' },
      },
    },
  },
};

/** The Standard Webhooks headers every delivery carries (docs/api-notes.md "Webhooks and audit logs"). */
const WEBHOOK_HEADERS = [
  { name: 'webhook-id', in: 'header', required: true, schema: { type: 'string' }, description: 'Event id (`evt_…`), the same on every retry: deduplicate on it.' },
  { name: 'webhook-timestamp', in: 'header', required: true, schema: { type: 'string' }, description: 'Unix time in seconds of this attempt; refuse ones far from your clock.' },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description: '`v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">` with the endpoint’s `whsec_…` secret; during a rotation, two space-separated signatures.',
  },
];

/**
 * The `webhooks` section: one entry per event type of domain/webhooks/catalog.ts, named by the type, whose
 * POST body is the envelope `{id, type, timestamp, organizationId, data}` with `data` of the type's schema.
 */
export function webhookItems(): Record<string, unknown> {
  const items: Record<string, unknown> = {};
  for (const e of EVENT_CATALOG) {
    items[e.type] = {
      post: {
        operationId: `${e.type.replace(/[._]([a-z])/g, (_m, c: string) => c.toUpperCase())}Event`,
        tags: ['Webhook events'],
        summary: e.type,
        description: `${e.description}. POSTed to every endpoint subscribed to \`${e.type}\`, signed as Standard Webhooks; answer 2xx within 15 s. Delivery order is not guaranteed.`,
        parameters: WEBHOOK_HEADERS,
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                allOf: [
                  { $ref: '#/components/schemas/WebhookEventEnvelope' },
                  { type: 'object', properties: { type: { const: e.type }, data: { $ref: `#/components/schemas/${e.schema}` } } },
                ],
              },
            },
          },
        },
        responses: {
          '200': { description: 'Received (any 2xx ends the delivery)' },
          '410': { description: 'Gone: the endpoint is disabled and receives nothing more' },
          default: { description: 'Anything else (or no answer within 15 s) is retried on the schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h' },
        },
      },
    };
  }
  return items;
}
