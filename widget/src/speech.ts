/**
 * Speech recognition errors in words (Web Speech API `SpeechRecognitionErrorEvent.error`,
 * https://wicg.github.io/speech-api/#speechreco-error), never the raw code. `no-speech` and `aborted` are part of
 * listening, not failures.
 */
export const SPEECH_ERRORS: Record<string, string> = {
  'not-allowed': 'Microphone access was refused — type to talk instead.',
  'service-not-allowed': 'This browser does not allow speech recognition here — type to talk instead.',
  'audio-capture': 'No microphone was found — type to talk instead.',
  network: 'Speech recognition could not reach its service — type to talk instead.',
  'language-not-supported': 'Speech recognition does not support this language here — type to talk instead.',
};

/** The words for an error code (a generic sentence for codes not listed). */
export function speechErrorText(code: string): string {
  return SPEECH_ERRORS[code] ?? 'Speech recognition stopped working — type to talk instead.';
}
