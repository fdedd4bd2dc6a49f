/**
 * CloudFormation shapes and intrinsic functions shared by the builders of infra/cfn. Everything the
 * builders return is plain CloudFormation (JSON-shaped objects); nothing here talks to AWS.
 */

/** A CloudFormation value: plain JSON or an intrinsic function object. */
export type Cfn = unknown;
export type CfnResource = { Type: string; Properties: Record<string, Cfn>; [attribute: string]: Cfn };
export type CfnResources = Record<string, CfnResource>;
export type Statement = { Sid: string; Effect: 'Allow'; Action: string[]; Resource: Cfn[]; Condition?: Record<string, Cfn> };

/** `Fn::Sub` of a template string. */
export const sub = (text: string) => ({ 'Fn::Sub': text });
/** `Fn::GetAtt` of a resource's attribute. */
export const getAtt = (id: string, attr: string) => ({ 'Fn::GetAtt': [id, attr] });
/** Leaves a property unset. */
export const NO_VALUE = { Ref: 'AWS::NoValue' };
/** `arn:<partition>:<service>:<region>:<account>` of the stack, for Fn::Sub. */
export const ACCOUNT_PREFIX = (service: string) => `arn:\${AWS::Partition}:${service}:\${AWS::Region}:\${AWS::AccountId}`;

/** CloudFormation's Fn::Sub treats `${...}` as a reference; literal text must escape it as `${!...}`. */
export const subLiteral = (text: string) => String(text).replace(/\$\{/g, '${!');
