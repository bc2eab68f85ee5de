/**
 * The href a page may give a link to a URL it did not write (a creative's file, an agent's site):
 * http(s) only, resolved as the browser would. A `javascript:` or `data:` URL stored before the
 * API refused them, or by any other path, is shown as text, never made clickable.
 */
export function linkHref(value: string | null | undefined): string | undefined {
  if (!value) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : undefined;
}
