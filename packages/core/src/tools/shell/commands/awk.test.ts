// The awk validator, through the whole classifier.
import { describe, it } from "vitest";
import { refused } from "../../../test-support/shell-testing.js";

describe("awk", () => {
  it("refuses awk programs with >, |, system, getline", () => {
    for (const token of [">", "|", "system", "getline"]) refused(`awk '{ x ${token} y }' f`, token);
  });
});
