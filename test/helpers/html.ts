/** Decodes the five entities api/oauth/forms.ts `esc` writes. */
export function decodeHTML(s: string): string {
  return s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!);
}
