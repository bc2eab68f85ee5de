import type { Principal } from '../application/api-keys';
import type { App } from '../services';

/** Per-request GraphQL context: the composed application and who is calling (null: anonymous). */
export interface GraphQLContext {
  app: App;
  principal: Principal | null;
  requestId: string;
  /** The origin this gateway is reached at (PUBLIC_URL, else the request's). */
  origin: string;
  /** The client's address (anonymous callers' limits count by it). */
  clientAddress: string;
}
