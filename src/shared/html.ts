/** Text (or a value's string form) safe in HTML content and quoted attributes: & < > " ' as character references. */
export const escapeHtml = (s: unknown): string => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
