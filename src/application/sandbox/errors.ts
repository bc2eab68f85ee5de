/** Controller outcomes that are not successes: in the body, as the compliance schema defines them. */
export class ControllerError extends Error {
  constructor(
    readonly code: 'UNKNOWN_SCENARIO' | 'INVALID_PARAMS' | 'NOT_FOUND' | 'INVALID_TRANSITION' | 'FORBIDDEN',
    message: string,
    readonly currentState?: string,
  ) {
    super(message);
  }
}

type Obj = Record<string, unknown>;

/** A required string parameter of a controller scenario. */
export const requireString = (params: Obj, name: string): string => {
  const v = params[name];
  if (typeof v !== 'string' || v.length === 0 || v.length > 255) throw new ControllerError('INVALID_PARAMS', `params.${name} is required (a string)`);
  return v;
};
