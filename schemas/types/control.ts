/**
 * Live control of conversations (docs/api-notes.md "Live control"; an addition beyond the spec's operations):
 * `POST /conversations/{id}/control` and the events of `GET /conversations/{id}/live`.
 */
import type { ConversationMessage } from './chat';
import type { TranscriptMessage } from './observe';

/** Request body of `POST /conversations/{id}/control`. */
export interface ConversationControlCreate {
  /**
   * On a call: `say` (spoken to the caller), `add_message` (a line for the model's context), `transfer`, `end`.
   * In chat, widget and SMS: `take_over` (the agent stops answering), `say` (the member's message to the person,
   * while taken over), `add_message`, `hand_back`, `end`.
   */
  action: 'say' | 'add_message' | 'transfer' | 'end' | 'take_over' | 'hand_back';
  /** The line of `say` or `add_message`. @minLength 1 @maxLength 2000 */
  content?: string;
  /** Where `transfer` sends the call: E.164 or a `sip:` URI. @maxLength 200 */
  to?: string;
}

/** Response data of `POST /conversations/{id}/control`. */
export interface ConversationControl {
  conversationId: string;
  action: ConversationControlCreate['action'];
  /** `applied`, or `queued` for the process holding the call's socket (applied when it claims it). */
  status: 'applied' | 'queued';
  conversationStatus: 'active' | 'ended';
  /** Who holds the conversation (`mem_…` or a key id), or null: its agent answers. */
  takenOverBy: string | null;
  /** The message stored by `say` or `add_message` on a text channel, else null. */
  message: ConversationMessage | null;
}

/**
 * `data` of the `message` event of `GET /conversations/{id}/live`: one transcript line, in order (`seq`).
 */
export interface LiveMessageEvent extends TranscriptMessage {
  seq: number;
}

/** `data` of the `state` event of `GET /conversations/{id}/live`: sent first and whenever it changes. */
export interface LiveStateEvent {
  conversationId: string;
  status: 'active' | 'ended';
  endReason: string | null;
  takenOverBy: string | null;
}
