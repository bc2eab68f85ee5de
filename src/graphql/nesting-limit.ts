import { GraphQLError, type ASTVisitor, type ValidationContext } from 'graphql';
import { MAX_JSON_DEPTH } from '../shared/json-depth';

/**
 * A validation rule: a document whose selection sets, object literals and list literals nest
 * deeper than MAX_JSON_DEPTH in all is refused, as a REST body nested that deep is. Without it a
 * JSON literal argument (`request: {context: {a: {a: …}}}`) could carry ~1,500 levels into the
 * log where REST stops at 64; selection sets of this schema stay a few levels deep. Apollo caches
 * validated documents, so a repeated query pays for this walk once.
 */
export function nestingLimitRule(context: ValidationContext): ASTVisitor {
  let depth = 0;
  let reported = false;
  const enter = () => {
    if (++depth > MAX_JSON_DEPTH && !reported) {
      reported = true;
      context.reportError(new GraphQLError(`the document nests deeper than ${MAX_JSON_DEPTH} levels (selections, object and list values together)`));
    }
  };
  const leave = () => {
    depth--;
  };
  return {
    SelectionSet: { enter, leave },
    ObjectValue: { enter, leave },
    ListValue: { enter, leave },
  };
}
