/**
 * A URL someone else will open or fetch (a creative's file, a brand's site, a format's agent):
 * http or https only. Other schemes either run in the page that shows the link (`javascript:`,
 * `vbscript:`), render content the link's author chose (`data:`), or reach nothing we serve
 * (`ftp:`, `file:`). Returns the URL as a browser would resolve it, or undefined.
 */
export function httpUrlOf(value: unknown): string | undefined {
  if (typeof value !== 'string' || !URL.canParse(value)) return undefined;
  const url = new URL(value);
  return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : undefined;
}

export const isHttpUrl = (value: unknown): value is string => httpUrlOf(value) !== undefined;

export const HTTP_URL_MESSAGE = 'must be an http or https URL';
