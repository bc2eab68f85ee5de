import { Field, ID, ObjectType } from 'type-graphql';

@ObjectType({ description: 'An API key as listed: never the secret.' })
export class ApiKey {
  @Field(() => ID)
  keyId!: string;

  @Field()
  org!: string;

  @Field()
  role!: string;

  @Field({ description: 'The lookup prefix shown in the key (sk_<prefix>_…).' })
  prefix!: string;

  @Field()
  issuedAt!: string;

  @Field(() => String, { nullable: true })
  revokedAt!: string | null;
}

@ObjectType({ description: 'A newly issued key. `key` is shown this once and stored only as a salted hash.' })
export class IssuedApiKey {
  @Field(() => ID)
  keyId!: string;

  @Field()
  key!: string;

  @Field()
  org!: string;

  @Field()
  role!: string;
}

@ObjectType({ description: 'Who the request is authenticated as: an API key, or a user token acting for one.' })
export class Viewer {
  @Field(() => ID, { description: 'The API key id (or, for an outside issuer\'s token, oauth|<subject>).' })
  keyId!: string;

  @Field()
  org!: string;

  @Field()
  role!: string;
}
