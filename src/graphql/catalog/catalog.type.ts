import { GraphQLJSONObject } from 'graphql-scalars';
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
  @Field(() => GraphQLJSONObject) targeting!: Record<string, unknown>;
  @Field({ description: 'Whether buys of this product wait for the seller.' }) requiresApproval!: boolean;
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
