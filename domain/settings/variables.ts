/**
 * Organization variables in agent drafts (docs/api-notes.md "Variables, escalation, onboarding, meta and settings"):
 * `{{vars.<name>}}` in the persona, instructions, greeting and any string of a skill config. At publish
 * (domain/agents/compile.ts) a non-secret reference is replaced by its value, so the version holds the
 * text it runs; a secret reference stays a reference in the version (never its value) and is resolved by
 * the skill executor when the skill runs. Secrets may appear only in skill configs: the persona,
 * instructions and greeting go to the language model and into diffs.
 */
import type { FieldError } from '../errors';

/** What the compiler knows of an organization variable (a secret's value is never loaded). */
export interface OrgVariableRef {
  id: string;
  name: string;
  secret: boolean;
  /** The value of a non-secret variable; null for a secret. */
  value: string | null;
}

/** A variable a version refers to, as its snapshot records it (a secret without its value). */
export interface CompiledVariableRef {
  name: string;
  id: string;
  secret: boolean;
  /** The value published (non-secret); absent for a secret. */
  value?: string;
}

/** `{{vars.name}}` with optional inner spaces; group 1 is the name. */
export const VARIABLE_REFERENCE = /\{\{\s*vars\.([a-z][a-z0-9_]{0,63})\s*\}\}/g;

/** The names referenced in `text`, in order of first appearance. */
export function referencedNames(text: string): string[] {
  return [...new Set([...text.matchAll(VARIABLE_REFERENCE)].map((m) => m[1]))];
}

/** Result of resolving references. */
export interface Resolution<T> {
  value: T;
  errors: FieldError[];
  used: Map<string, OrgVariableRef>;
}

/**
 * Replaces `{{vars.x}}` in every string of `value` (recursively through arrays and objects).
 * @param field the field path of `value` for error messages, e.g. `instructions`, `skills[book].config`
 * @param allowSecrets true in skill configs: a secret reference is kept as it is; false elsewhere: an error
 * @returns the value with non-secret references replaced, the field errors (unknown variable, a secret
 *   where none is allowed) and the variables used
 */
export function resolveReferences<T>(value: T, vars: ReadonlyMap<string, OrgVariableRef>, field: string, allowSecrets: boolean): Resolution<T> {
  const errors: FieldError[] = [];
  const used = new Map<string, OrgVariableRef>();
  const walk = (v: unknown, path: string): unknown => {
    if (typeof v === 'string') {
      return v.replace(VARIABLE_REFERENCE, (whole, name: string) => {
        const found = vars.get(name);
        if (!found) {
          errors.push({ field: path, message: `references "vars.${name}", which is not a variable of this organization (POST /variables)` });
          return whole;
        }
        used.set(name, found);
        if (!found.secret) return found.value ?? '';
        if (!allowSecrets) errors.push({ field: path, message: `references the secret variable "vars.${name}"; secrets may be used only in skill configs` });
        return whole;
      });
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, `${path}[${i}]`));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, `${path}.${k}`)]));
    return v;
  };
  return { value: walk(value, field) as T, errors, used };
}

/**
 * Fills the secret references kept in a published skill config with their values (the skill executor,
 * right before the call; the values never reach a version, a receipt or a log).
 * @param lookup the opened value of a secret variable by name, undefined when it no longer exists
 * @throws Error naming the variable when a referenced secret no longer exists
 */
export function fillSecrets<T>(value: T, lookup: ReadonlyMap<string, string>): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      return v.replace(VARIABLE_REFERENCE, (_whole, name: string) => {
        const found = lookup.get(name);
        if (found === undefined) throw new Error(`the secret variable "vars.${name}" no longer exists`);
        return found;
      });
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}

/** Every `vars.` name referenced by any string inside `value`. */
export function namesIn(value: unknown): string[] {
  const out = new Set<string>();
  const walk = (v: unknown): void => {
    if (typeof v === 'string') for (const n of referencedNames(v)) out.add(n);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(value);
  return [...out];
}
