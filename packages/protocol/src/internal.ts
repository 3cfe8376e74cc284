// @forkd/protocol/internal: what forkd's own packages and tests need of @forkd/protocol beyond its public
// API (see index.ts). Not covered by semver; applications import from @forkd/protocol.
export type { CodecOptions, LenientForkEvent } from "./codec.js";
export { createCodec, decodeEventLenient, parseWireJson } from "./codec.js";
export {
  abortProof,
  budgetCapProof,
  controlProof,
  groupToken,
  HexSecretSchema,
  newSecret,
  ownerToken,
  permissionProof,
  proofMatches,
  steerProof,
  stopProof,
  toolHostCallProof,
  toolHostProof,
} from "./control-proof.js";
export { type SplitInlineSpec, spliceInlineSpec, splitInlineSpec } from "./inline-spec-layout.js";
export {
  memberTextOf,
  type UnkeptValueText,
  valuesJsonCannotKeep,
} from "./json-fidelity.js";
export { keptByJavaScript } from "./json-kept.js";
export { hasEscapedKey, parseJsonText } from "./json-text.js";
export { longestPrefixLookup, normaliseModelId } from "./model-facts.js";
