import { Field, InputType, registerEnumType } from 'type-graphql';

export enum RoleInput {
  buyer = 'buyer',
  seller = 'seller',
  admin = 'admin',
}
registerEnumType(RoleInput, { name: 'Role', description: 'What a key may do.' });

@InputType()
export class IssueApiKeyInput {
  @Field({ description: 'Organisation the key acts for.' })
  org!: string;

  @Field(() => RoleInput, { defaultValue: RoleInput.buyer })
  role!: RoleInput;
}
