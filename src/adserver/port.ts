/**
 * Where delivery comes from. The built-in simulator paces active buys on the gateway's clock;
 * a real ad server would implement the same port and append the same DeliveryRecorded events.
 */
export interface AdServer {
  start(): Promise<void>;
  /** Records delivery up to the clock's current (whole) hour and completes buys whose flight ended. */
  tick(): Promise<void>;
  stop(): Promise<void>;
}
