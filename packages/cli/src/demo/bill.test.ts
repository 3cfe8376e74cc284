import { describe, expect, it } from "vitest";
import { styleFor } from "../io.js";
import { type ChildBill, lineOf, makeBill, renderBill, sumLines } from "./bill.js";

const model = "claude-sonnet-4-5";

function child(index: number, cacheRead: number, cacheWrite: number): ChildBill {
  return {
    ...lineOf(model, [
      {
        input_tokens: 394,
        cache_creation_input_tokens: cacheWrite,
        cache_read_input_tokens: cacheRead,
        output_tokens: 150,
      },
    ]),
    index,
    label: `slice ${index}`,
    runId: `run-${index}`,
    status: "completed",
    daemonId: "demo-1",
    durationMs: 700,
  };
}

describe("the demo's bill", () => {
  it("prices usage at the model's list price", () => {
    const line = lineOf(model, [
      {
        input_tokens: 1_000_000,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 0,
      },
    ]);
    expect(line).toEqual({ input: 1_000_000, cacheWrite: 0, cacheRead: 0, output: 0, costUsd: 3 });
    expect(lineOf("a-model-nobody-knows", [{ input_tokens: 1, output_tokens: 1 }]).costUsd).toBeNull();
  });

  it("sums the children and works out the saving against the unforked requests", () => {
    const children = [child(1, 44_017, 185), child(2, 44_202, 0), child(3, 44_202, 0)];
    const unforked = children.map(() =>
      lineOf(model, [
        {
          input_tokens: 44_596,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: 150,
        },
      ]),
    );
    const bill = makeBill({
      model,
      parent: {
        ...lineOf(model, [{ input_tokens: 3, cache_creation_input_tokens: 44_017, output_tokens: 51 }]),
        durationMs: 400,
      },
      children,
      unforkedChildren: unforked,
    });
    expect(bill.forked).toEqual(sumLines(children));
    expect(bill.forked.cacheRead).toBe(44_017 + 2 * 44_202);
    expect(bill.forked.costUsd).toBeCloseTo(
      children.reduce((sum, c) => sum + c.costUsd!, 0),
      8,
    );
    expect(bill.savingUsd).toBeCloseTo(bill.unforked.costUsd! - bill.forked.costUsd!, 8);
    expect(bill.savingShare).toBeGreaterThan(0.8);

    const lines = renderBill(bill, styleFor({ write() {} }, {}));
    expect(lines[0]).toMatch(
      /^\s+input\s+cache write\s+cache read\s+cached\s+output\s+cost\s+daemon\s+time\s+cache miss$/,
    );
    expect(lines[1]).toMatch(
      /^parent turn \(wrote the cache\)\s+3\s+44,017\s+0\s+0\.0%\s+51\s+\$0\.1658\s+400ms$/,
    );
    expect(lines[2]).toMatch(
      /^child 1 {2}slice 1\s+394\s+185\s+44,017\s+98\.7%\s+150\s+\$0\.\d{4}\s+demo-1\s+700ms$/,
    );
    expect(lines[5]).toMatch(/^forked total \(3 children\)\s+1,182\s+185\s+132,421\s+\d+\.\d%\s+450\s+\$/);
    expect(lines[6]).toMatch(/^without forking \(3 fresh requests\)\s+133,788\s+0\s+0\s+0\.0%\s+450\s+\$/);
    expect(lines[7]).toMatch(/^saving: \$0\.\d{4} \(\d+\.\d%\) of the children's cost$/);
  });
});
