/**
 * The public base URL callers reach the service at (docs/configuration.md: `PUBLIC_BASE_URL`): the
 * configured one, or the request's own scheme and host when the configured one names port 0 (tests and
 * `PORT=0` start-ups, whose port is known only once listening).
 * @param publicBaseUrl `config.publicBaseUrl`
 * @returns scheme, host and any path prefix, without a trailing slash
 */
export function publicOrigin(ctx: { protocol: string; host: string }, publicBaseUrl: string): string {
  return /:0\/?$/.test(publicBaseUrl) ? `${ctx.protocol}://${ctx.host}` : publicBaseUrl.replace(/\/$/, '');
}
