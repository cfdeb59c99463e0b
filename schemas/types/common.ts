/** Wire types shared by every operation (spec "Response envelope", "Problem details"). */

/** One field-level problem. */
export interface FieldError {
  field: string;
  message: string;
}

/** Success envelope (spec "Response envelope"); `data`'s type depends on the operation. */
export interface Envelope {
  success: boolean;
  message?: string;
  errors?: FieldError[];
  data: unknown;
}

/** RFC 9457 problem details (spec "Problem details"). */
export interface Problem {
  /** @format uri */
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  /** Stable machine code, e.g. `validation_error`. */
  code: string;
  errors?: FieldError[];
}
