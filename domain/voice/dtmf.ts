/**
 * Keypad input on calls (spec "What the service does": DTMF is configured on the agent; docs/voice.md): digits arriving as ConversationRelay `dtmf` frames are gathered into one input, complete when
 * the terminator key is pressed, when `maxDigits` digits arrived, or when no digit came for
 * `interDigitTimeoutMs`. The completed input is answered as the caller's next message, so a playbook's
 * `ask` node gathers a PIN or a menu choice the same way it gathers a spoken answer. Pure: the relay owns
 * the timer.
 */
import type { DtmfSettings } from '../../schemas/types/agents';

/** What a digit did. */
export type DigitOutcome = { complete: string } | { waitMs: number } | { ignored: true };

/** The digits of one input being gathered. */
export class DigitGatherer {
  private digits = '';

  constructor(private readonly settings: Required<DtmfSettings>) {}

  /** Adds a digit. @returns the completed input, or how long to wait for the next digit (ms), or ignored when keypad input is off */
  push(digit: string): DigitOutcome {
    if (!this.settings.enabled) return { ignored: true };
    if (this.settings.terminator && digit === this.settings.terminator) return { complete: this.take() };
    this.digits += digit;
    if (this.digits.length >= this.settings.maxDigits) return { complete: this.take() };
    return { waitMs: this.settings.interDigitTimeoutMs };
  }

  /** The inter-digit timeout passed: the digits so far, or '' when none. */
  timeout(): string {
    return this.take();
  }

  private take(): string {
    const d = this.digits;
    this.digits = '';
    return d;
  }
}
