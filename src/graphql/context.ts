import type { Principal } from '../application/api-keys';
import type { App } from '../app';
import type { BudgetVerdict } from '../http/shared-budgets';
import type { OperationCost } from './cost';

/** Per-request GraphQL context: the composed application and who is calling (null: anonymous). */
export interface GraphQLContext {
  app: App;
  principal: Principal | null;
  requestId: string;
  /** The origin this gateway is reached at (PUBLIC_URL, else the request's). */
  origin: string;
  /** The client's address (anonymous callers' limits count by it). */
  clientAddress: string;
  /** This request's place in the caller's request rate (absent with RESOURCE_LIMITS=off). */
  requestBudget?: BudgetVerdict;
  /** The operation's price and the points it left (graphql/cost-limits.ts). */
  priced: { cost: OperationCost | undefined; points: BudgetVerdict | undefined };
}
