import { Field, Float, InputType } from 'type-graphql';

@InputType({ description: 'One package to buy: a product at one of its pricing options.' })
export class PackageInput {
  @Field()
  productId!: string;

  @Field()
  pricingOptionId!: string;

  @Field(() => Float, { description: 'Budget in the pricing option’s currency.' })
  budget!: number;

  @Field(() => Float, { nullable: true, description: 'The bid, for an auction-priced option.' })
  bidPrice?: number | null;

  @Field(() => String, { nullable: true, description: 'Your own reference for the package.' })
  buyerRef?: string | null;
}

@InputType({ description: 'A media buy to place (create_media_buy). Errors name the input field they are about in `extensions.field` (e.g. `packages[0].budget`).' })
export class MediaBuyInput {
  @Field({ description: 'Your reference for the buy; placing the same one twice is refused.' })
  buyerRef!: string;

  @Field({ description: 'Your brand’s website (its brand.json is read from there).' })
  brandUrl!: string;

  @Field(() => [PackageInput])
  packages!: PackageInput[];

  @Field(() => String, { nullable: true, description: 'When the flight starts (ISO 8601); default: as soon as possible.' })
  startTime?: string | null;

  @Field({ description: 'When the flight ends (ISO 8601).' })
  endTime!: string;
}
