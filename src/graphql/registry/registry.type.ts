import { Field, Float, Int, ObjectType, registerEnumType } from 'type-graphql';
import { RegistryFeedEntry } from '../live/live.type';

export enum FindingSeverity {
  ERROR = 'error',
  WARNING = 'warning',
}
registerEnumType(FindingSeverity, { name: 'FindingSeverity', description: 'ERROR invalidates the file; WARNING never does.' });

@ObjectType({ description: 'One thing the last revalidation found wrong, or worth fixing, in a publisher’s adagents.json.' })
export class AdagentsFinding {
  @Field(() => FindingSeverity)
  severity!: FindingSeverity;

  @Field({ description: 'Where: a path in the file (authorized_agents[0].url) or the stage that failed (http_status, json, timeout, authoritative_location, …).' })
  field!: string;

  @Field()
  message!: string;

  @Field(() => String, { nullable: true, description: 'How to fix it, when the validator says.' })
  suggestion!: string | null;
}

@ObjectType({ description: 'A sales agent a publisher’s adagents.json authorizes.' })
export class AuthorizedAgent {
  @Field()
  url!: string;

  @Field(() => String, { nullable: true, description: 'What it is authorized for, in the publisher’s words.' })
  authorizedFor!: string | null;

  @Field(() => String, { nullable: true, description: 'property_ids, property_tags, inline_properties, publisher_properties, …' })
  authorizationType!: string | null;
}

@ObjectType({ description: 'One identifier of a property (a domain, an app bundle id, …).' })
export class PropertyIdentifier {
  @Field({ description: 'domain, subdomain, ios_bundle, android_package, …' })
  type!: string;

  @Field()
  value!: string;
}

@ObjectType({ description: 'A property a publisher’s adagents.json declares.' })
export class DeclaredProperty {
  @Field(() => String, { nullable: true })
  propertyId!: string | null;

  @Field(() => String, { nullable: true, description: 'website, mobile_app, ctv_app, …' })
  propertyType!: string | null;

  @Field(() => String, { nullable: true })
  name!: string | null;

  @Field(() => String, { nullable: true, description: 'The domain that owns it, when not the publisher itself.' })
  publisherDomain!: string | null;

  @Field(() => [PropertyIdentifier])
  identifiers!: PropertyIdentifier[];

  @Field(() => [String])
  tags!: string[];
}

@ObjectType({ description: 'A publisher as its last adagents.json revalidation left it.' })
export class Publisher {
  @Field()
  domain!: string;

  @Field({ description: 'The verdict: whether the last revalidation found a valid adagents.json.' })
  adagentsValid!: boolean;

  @Field({ description: 'When it was last revalidated (ISO 8601).' })
  checkedAt!: string;

  @Field({ description: 'Whether the last check failed for a reason that says nothing about the file (timeout, network, 5xx): the verdict, agents and properties are then those of the check before, the findings and error those of the last one.' })
  lastCheckTransient!: boolean;

  @Field(() => String, { nullable: true, description: 'Why the last revalidation failed, in a sentence (null when it did not).' })
  error!: string | null;

  @Field(() => [AdagentsFinding], { description: 'Errors first, then warnings, as the validator reported them.' })
  findings!: AdagentsFinding[];

  @Field(() => String, { nullable: true, description: 'direct, authoritative_location or ads_txt_manager: how the file was found.' })
  discoveryMethod!: string | null;

  @Field(() => String, { nullable: true, description: 'domain (the publisher’s own) or adagents_authoritative (a manager’s file).' })
  authority!: string | null;

  @Field(() => String, { nullable: true, description: 'The manager whose file carries the authority, if one does.' })
  managerDomain!: string | null;

  @Field(() => Int, { nullable: true, description: 'The HTTP status the file was served with.' })
  statusCode!: number | null;

  @Field(() => String, { nullable: true, description: 'Where the file was finally read from.' })
  resolvedUrl!: string | null;

  @Field(() => [AuthorizedAgent], { description: 'The agents the last valid file authorizes (empty after an authoritative negative).' })
  authorizedAgents!: AuthorizedAgent[];

  @Field(() => [DeclaredProperty], { description: 'The properties the last valid file declares, in file order.' })
  properties!: DeclaredProperty[];
}

@ObjectType({ description: 'One step of a storyboard: a task the agent under test is asked to do and what it must answer.' })
export class StoryboardStep {
  @Field()
  id!: string;

  @Field()
  title!: string;

  @Field({ description: 'What the step does (the YAML’s narrative).' })
  description!: string;

  @Field({ description: 'What a compliant agent answers (the YAML’s expected).' })
  expectedOutput!: string;

  @Field(() => String, { nullable: true, description: 'The AdCP task it calls (get_products, create_media_buy, …).' })
  task!: string | null;

  @Field(() => Int, { description: 'How many checks the runner makes of the answer.' })
  validationCount!: number;
}

@ObjectType({ description: 'A phase of a storyboard: steps run in order.' })
export class StoryboardPhase {
  @Field()
  id!: string;

  @Field()
  title!: string;

  @Field({ description: 'What the phase establishes.' })
  narrative!: string;

  @Field(() => [StoryboardStep])
  steps!: StoryboardStep[];
}

@ObjectType({ description: 'The sample advertiser a storyboard runs with.' })
export class StoryboardTestKit {
  @Field()
  id!: string;

  @Field(() => String, { nullable: true })
  name!: string | null;

  @Field(() => String, { nullable: true })
  description!: string | null;
}

@ObjectType({ description: 'A compliance storyboard (spec StoryboardDetail): phases of steps an agent is tested with.' })
export class Storyboard {
  @Field()
  id!: string;

  @Field()
  title!: string;

  @Field()
  category!: string;

  @Field()
  summary!: string;

  @Field({ description: 'The compliance bundle it was read from (e.g. 3.1.18).' })
  adcpVersion!: string;

  @Field({ description: 'The compliance target asked for (default: the bundle’s line).' })
  requestedComplianceTarget!: string;

  @Field({ description: 'How the runner talks to the agent, as the storyboard says (may be empty).' })
  interactionModel!: string;

  @Field(() => [StoryboardPhase])
  phases!: StoryboardPhase[];

  @Field(() => StoryboardTestKit, { nullable: true })
  testKit!: StoryboardTestKit | null;
}

@ObjectType({ description: 'A storyboard as a list names it.' })
export class StoryboardSummary {
  @Field()
  id!: string;

  @Field()
  title!: string;

  @Field()
  category!: string;
}

@ObjectType({ description: 'How current the change feed is.' })
export class FeedFreshness {
  @Field()
  generatedAt!: string;

  @Field(() => String, { nullable: true, description: 'When the newest entry (of the types asked for) was recorded.' })
  latestEventCreatedAt!: string | null;

  @Field(() => Int, { nullable: true })
  lagSeconds!: number | null;

  @Field(() => Int, { description: 'Days entries stay readable; an older cursor is refused.' })
  retentionDays!: number;
}

@ObjectType({ description: 'A page of the registry change feed, oldest entry first.' })
export class RegistryFeedPage {
  @Field(() => [RegistryFeedEntry])
  entries!: RegistryFeedEntry[];

  @Field(() => String, { nullable: true, description: 'The last entry’s eventId: pass it as `cursor` for the next page (null: the feed is empty).' })
  cursor!: string | null;

  @Field({ description: 'Whether more entries follow this page.' })
  hasMore!: boolean;

  @Field(() => Float, { nullable: true, description: 'The last entry’s log position: a registryFeed subscription `after` it misses nothing (null: no entries).' })
  lastPosition!: number | null;

  @Field(() => FeedFreshness)
  freshness!: FeedFreshness;
}
