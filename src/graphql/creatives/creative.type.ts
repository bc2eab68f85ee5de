import { Field, ID, Int, ObjectType } from 'type-graphql';
import { FormatId } from '../catalog/catalog.type';
import { PageInfo } from '../buys/buy.type';

@ObjectType({ description: 'One asset of a creative: an image or a video file, or other content by kind.' })
export class CreativeAsset {
  @Field({ description: 'The asset’s kind as the format names it: image, video, html, …' })
  kind!: string;

  @Field(() => String, { nullable: true })
  url!: string | null;

  @Field(() => Int, { nullable: true })
  width!: number | null;

  @Field(() => Int, { nullable: true })
  height!: number | null;

  @Field(() => Int, { nullable: true, description: 'A video’s duration in milliseconds.' })
  durationMs!: number | null;
}

@ObjectType({ description: 'A package a creative is assigned to, and since when.' })
export class CreativeAssignment {
  @Field()
  packageId!: string;

  @Field()
  assignedAt!: string;
}

@ObjectType({ description: 'A creative of the buyer’s library (sync_creatives / list_creatives): a format filled with assets, assigned to packages.' })
export class Creative {
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field(() => FormatId)
  format!: FormatId;

  @Field({ description: 'display, video, … (the format’s type).' })
  formatType!: string;

  @Field({ description: 'processing, pending_review, approved, suspended, rejected or archived.' })
  status!: string;

  @Field(() => [CreativeAsset])
  assets!: CreativeAsset[];

  @Field(() => String, { nullable: true, description: 'The URL of its first image or video asset.' })
  url!: string | null;

  @Field(() => [CreativeAssignment])
  assignments!: CreativeAssignment[];

  @Field()
  createdAt!: string;

  @Field()
  updatedAt!: string;
}

@ObjectType({ description: 'What syncing one creative did.' })
export class CreativeSyncResult {
  @Field({ description: 'created, updated or unchanged; pending while the seller reviews the sync (APPROVAL_POLICY=manual).' })
  action!: string;

  @Field(() => Creative, { nullable: true, description: 'The creative as it now is (null while the sync awaits the seller).' })
  creative!: Creative | null;

  @Field(() => String, { nullable: true, description: 'The task the sync waits on, when it waits for the seller.' })
  taskId!: string | null;
}

@ObjectType()
export class CreativeEdge {
  @Field()
  cursor!: string;

  @Field(() => Creative)
  node!: Creative;
}

@ObjectType({ description: 'A page of creatives (a cursor connection), by id.' })
export class CreativeConnection {
  @Field(() => [CreativeEdge])
  edges!: CreativeEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}
