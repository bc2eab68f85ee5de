/** A JSON object (not null, not an array): what request bodies, params and fixtures must be. */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
