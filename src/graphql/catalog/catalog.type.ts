import { GraphQLJSONObject } from '../json-object';
import { Field, Float, InputType, Int, ObjectType } from 'type-graphql';

@ObjectType({ description: 'A creative format reference: the creative agent that defines it and its id.' })
export class FormatId {
  @Field() agentUrl!: string;
  @Field() id!: string;
}

@ObjectType()
export class PricingOption {
  @Field() pricingOptionId!: string;
  @Field({ description: 'cpm, cpm-auction, flat-fee, … (open-ended).' }) pricingModel!: string;
  @Field(() => Float, { nullable: true, description: 'Fixed price (CPM or flat fee).' }) price?: number;
  @Field(() => Float, { nullable: true, description: 'Minimum bid for auction pricing.' }) floor?: number;
  @Field() currency!: string;
}

@ObjectType()
export class PublisherProperty {
  @Field() publisherDomain!: string;
  @Field() selectionType!: string;
}

@ObjectType({ description: 'A targeting dimension the catalog names beyond countries, audiences and keywords.' })
export class TargetingDimension {
  @Field() key!: string;
  @Field(() => [String], { description: 'Its values as text.' }) values!: string[];
}

@ObjectType({ description: 'Who and where a product reaches, as the seller describes it.' })
export class ProductTargeting {
  @Field(() => [String], { description: 'Countries (ISO 3166-1 alpha-2).' }) geoCountries!: string[];
  @Field(() => [String]) audiences!: string[];
  @Field(() => [String]) keywords!: string[];
  @Field(() => [TargetingDimension]) other!: TargetingDimension[];
}

@ObjectType({ description: 'What the seller’s ad server can deliver of a product (sellers and admins only).' })
export class ProductCapacity {
  @Field(() => Int, { description: 'Impressions a day across every buy of the product.' }) dailyImpressions!: number;
  @Field(() => Float, { description: 'Expected click-through rate (0 to 1).' }) ctr!: number;
}

@ObjectType({ description: 'A product from the seller catalog, ranked against the brief when one is given.' })
export class Product {
  @Field() productId!: string;
  @Field() name!: string;
  @Field() description!: string;
  @Field(() => [String]) channels!: string[];
  @Field({ description: 'guaranteed or non_guaranteed.' }) deliveryType!: string;
  @Field(() => [FormatId]) formatIds!: FormatId[];
  @Field(() => [PricingOption]) pricingOptions!: PricingOption[];
  @Field(() => [PublisherProperty]) publisherProperties!: PublisherProperty[];
  @Field(() => ProductTargeting) targeting!: ProductTargeting;
  @Field({ description: 'Whether buys of this product wait for the seller.' }) requiresApproval!: boolean;
  @Field(() => ProductCapacity, { nullable: true, description: 'The ad server’s capacity: in the seller’s `catalog` only (null in a buyer’s `products`).' }) capacity?: ProductCapacity;
  @Field({ nullable: true }) briefRelevance?: string;
  @Field(() => Float, { nullable: true, description: 'BM25 score against the brief (higher is more relevant).' }) relevanceScore?: number;
}

@ObjectType()
export class Dimensions {
  @Field(() => Int) width!: number;
  @Field(() => Int) height!: number;
}

@ObjectType({ description: 'A creative format: dimensions, requirements and asset schemas.' })
export class CreativeFormat {
  @Field(() => FormatId) formatId!: FormatId;
  @Field() name!: string;
  @Field({ description: 'display, video, …' }) type!: string;
  @Field(() => Dimensions, { nullable: true }) dimensions?: Dimensions;
  @Field(() => GraphQLJSONObject) requirements!: Record<string, unknown>;
  @Field(() => [GraphQLJSONObject]) assets!: Record<string, unknown>[];
}

@InputType()
export class BudgetRangeInput {
  @Field(() => Float, { nullable: true }) min?: number;
  @Field(() => Float, { nullable: true }) max?: number;
}

@InputType()
export class ProductFiltersInput {
  @Field(() => [String], { nullable: true }) channels?: string[];
  @Field(() => BudgetRangeInput, { nullable: true }) budgetRange?: BudgetRangeInput;
  @Field({ nullable: true }) deliveryType?: string;
  @Field(() => [String], { nullable: true }) formatTypes?: string[];
}

@ObjectType({ description: 'One product of a proposal and its share of the budget.' })
export class ProposalAllocation {
  @Field() productId!: string;
  @Field() pricingOptionId!: string;
  @Field(() => Float, { description: 'Percent of the total budget; a proposal\'s allocations sum to 100.' }) allocationPercentage!: number;
  @Field({ nullable: true }) rationale?: string;
}

@ObjectType({ description: 'A curated media plan from the seller: accept it with createMediaBuy {proposal_id, total_budget}.' })
export class Proposal {
  @Field() proposalId!: string;
  @Field() name!: string;
  @Field({ nullable: true }) description?: string;
  @Field(() => [ProposalAllocation]) allocations!: ProposalAllocation[];
  @Field({ nullable: true, description: '`committed` while finalized (pricing firm, inventory held until expiresAt); absent: ready to buy at the listed prices.' })
  proposalStatus?: string;
  @Field({ nullable: true }) expiresAt?: string;
  @Field({ nullable: true }) briefAlignment?: string;
}

@InputType({ description: 'One change request of a refinement (AdCP get_products refine[]): scope request | product | proposal.' })
export class RefineInput {
  @Field({ description: 'request, product or proposal.' }) scope!: string;
  @Field({ nullable: true }) productId?: string;
  @Field({ nullable: true }) proposalId?: string;
  @Field({ nullable: true, description: 'product: include | omit | more_like_this; proposal: include | omit | finalize.' }) action?: string;
  @Field({ nullable: true, description: 'Free text: this seller applies "drop <channel>" and "shift N% to <channel>".' }) ask?: string;
}

@ObjectType({ description: 'How one refine entry was handled, matched by position.' })
export class RefinementOutcome {
  @Field() scope!: string;
  @Field({ nullable: true }) productId?: string;
  @Field({ nullable: true }) proposalId?: string;
  @Field({ description: 'applied, partial or unable.' }) status!: string;
  @Field({ nullable: true }) notes?: string;
}

@ObjectType()
export class Refinement {
  @Field(() => [Product]) products!: Product[];
  @Field(() => [Proposal]) proposals!: Proposal[];
  @Field(() => [RefinementOutcome]) refinementApplied!: RefinementOutcome[];
}
