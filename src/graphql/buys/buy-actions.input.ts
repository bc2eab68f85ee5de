import { Field, Float, ID, InputType } from 'type-graphql';

@InputType({ description: 'A new budget for one package of the buy.' })
export class PackageBudgetInput {
  @Field()
  packageId!: string;

  @Field(() => Float, { description: 'The package’s new budget in the buy’s currency (more than 0).' })
  budget!: number;
}

@InputType({ description: 'Budget and flight changes to a media buy (update_media_buy). Errors name the input field in `extensions.field` (e.g. `packages[0].budget`).' })
export class MediaBuyBudgetInput {
  @Field(() => ID)
  mediaBuyId!: string;

  @Field(() => [PackageBudgetInput], { nullable: true, description: 'Packages whose budget changes; the buy’s total follows.' })
  packages?: PackageBudgetInput[] | null;

  @Field(() => String, { nullable: true, description: 'A new end of the flight (ISO 8601), after the start and in the future.' })
  endTime?: string | null;
}
