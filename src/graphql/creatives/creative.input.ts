import { Field, InputType, Int } from 'type-graphql';

@InputType({ description: 'A creative format reference, as creativeFormats lists it.' })
export class FormatIdInput {
  @Field()
  agentUrl!: string;

  @Field()
  id!: string;
}

@InputType({ description: 'One creative to create or update (sync_creatives) from one hosted file. Errors name the input field (`assetUrl`, `packageIds[0]`, …).' })
export class CreativeInput {
  @Field(() => String, { nullable: true, description: 'Your id for it (A-Z a-z 0-9 _ . : -); default: a new one. Syncing an id again updates it.' })
  creativeId?: string | null;

  @Field()
  name!: string;

  @Field(() => FormatIdInput)
  formatId!: FormatIdInput;

  @Field({ description: 'Where the image or video file is (https).' })
  assetUrl!: string;

  @Field(() => Int, { nullable: true, description: 'A video’s duration in milliseconds (video formats).' })
  durationMs?: number | null;

  @Field(() => [String], { nullable: true, description: 'Packages of your live buys to assign it to (replaces its assignments when given).' })
  packageIds?: string[] | null;
}

@InputType({ description: 'Creatives to assign to packages of your live buys.' })
export class CreativeAssignmentInput {
  @Field(() => [String])
  creativeIds!: string[];

  @Field(() => [String])
  packageIds!: string[];

  @Field({ defaultValue: false, description: 'Replace each creative’s assignments with these packages (default: add them).' })
  replace!: boolean;
}
