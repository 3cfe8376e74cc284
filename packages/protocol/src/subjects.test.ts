// Subject and resource names, and the proof that the specs stream and the events stream do not overlap.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runIdArb } from "./arbitraries.js";
import { ProtocolError } from "./errors.js";
import { DEFAULT_SUBJECT_PREFIX, eventMsgId, forkSubjects, isValidRunId } from "./subjects.js";

/** NATS subject matching: `*` is one token, `>` one or more trailing tokens. */
function matches(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return s.length > i;
    if (i >= s.length || (f[i] !== "*" && f[i] !== s[i])) return false;
  }
  return f.length === s.length;
}

/** True when some subject matches both filters (what JetStream refuses between streams or work-queue consumers). */
function overlaps(a: string, b: string): boolean {
  const x = a.split(".");
  const y = b.split(".");
  for (let i = 0; ; i++) {
    const p = x[i];
    const q = y[i];
    if (p === ">") return q !== undefined;
    if (q === ">") return p !== undefined;
    if (p === undefined || q === undefined) return p === q;
    if (p !== "*" && q !== "*" && p !== q) return false;
  }
}

describe("the subject matcher used by these tests", () => {
  it.each([
    ["foo.*", "foo.bar", true],
    ["foo.*", "foo.bar.baz", false],
    ["foo.*", "foo", false],
    ["foo.>", "foo.bar.baz", true],
    ["foo.>", "foo", false],
    ["foo.*.baz", "foo.bar.baz", true],
    ["foo.bar", "foo.bar", true],
  ])("%s matches %s: %s", (filter, subject, expected) => {
    expect(matches(filter, subject)).toBe(expected);
  });

  it.each([
    ["a.*", "a.b", true],
    ["a.*", "a.*.c", false],
    ["a.>", "a.*.c", true],
    ["a.*.c", "a.b.*", true],
    ["a.*.c", "a.b.d", false],
    ["a.>", "a", false],
  ])("%s overlaps %s: %s", (a, b, expected) => {
    expect(overlaps(a, b)).toBe(expected);
    expect(overlaps(b, a)).toBe(expected);
  });
});

describe("forkSubjects()", () => {
  const s = forkSubjects();

  it("builds every subject and resource name for the default prefix", () => {
    expect(s.subjectPrefix).toBe(DEFAULT_SUBJECT_PREFIX);
    expect(s.spec("r1")).toBe("agent.fork.r1");
    expect(s.events("r1")).toBe("agent.fork.r1.events");
    expect(s.abort("r1")).toBe("agent.fork.r1.abort");
    expect(s.permission("r1")).toBe("agent.fork.r1.permission");
    expect(s.toolHost("h1")).toBe("agent.toolhost.h1");
    expect(s.allSpecs).toBe("agent.fork.*");
    expect(s.allEvents).toBe("agent.fork.*.events");
    expect(s.allAborts).toBe("agent.fork.*.abort");
    expect(s.allPermissions).toBe("agent.fork.*.permission");
    expect(s.steer("r1")).toBe("agent.fork.r1.steer");
    expect(s.allSteers).toBe("agent.fork.*.steer");
    expect(s.runIdOf("agent.fork.r1.steer")).toBe("r1");
    expect(s.streams).toEqual({ specs: "AGENT_FORK_SPECS", events: "AGENT_FORK_EVENTS" });
    expect(s.specsConsumer).toBe("agent_fork_daemons");
    expect(s.buckets).toEqual({
      runs: "agent_fork_runs",
      daemons: "agent_fork_daemons",
      prefixes: "agent_fork_prefixes",
    });
    // The names JetStream gives the streams behind a KV bucket and an object store.
    expect(s.bucketStreams).toEqual({
      runs: "KV_agent_fork_runs",
      daemons: "KV_agent_fork_daemons",
      prefixes: "OBJ_agent_fork_prefixes",
    });
  });

  it("reads the run back from each of its subjects, and nothing from any other", () => {
    const t = forkSubjects("acme.prod-1");
    for (const subject of [t.spec("r-1"), t.events("r-1"), t.abort("r-1"), t.permission("r-1")]) {
      expect(t.runIdOf(subject), subject).toBe("r-1");
    }
    for (const subject of [
      "acme.prod-1.fork",
      "acme.prod-1.fork.",
      "acme.prod-1.fork.r-1.other",
      "acme.prod-1.fork.r-1.events.x",
      "acme.prod-1.toolhost.h",
      "agent.fork.r-1",
      "acme.prod-1.forked.r-1",
      "acme.prod-1x.fork.r-1",
    ]) {
      expect(t.runIdOf(subject), subject).toBeUndefined();
    }
    // An invalid run token is still named, so that its spec can be refused and removed.
    expect(t.runIdOf("acme.prod-1.fork.a~b")).toBe("a~b");
    fc.assert(fc.property(runIdArb, (runId) => t.runIdOf(t.events(runId)) === runId));
  });

  it("uses a custom prefix everywhere; resource names replace dots and dashes", () => {
    const t = forkSubjects("acme.prod-1");
    expect(t.spec("r1")).toBe("acme.prod-1.fork.r1");
    expect(t.events("r1")).toBe("acme.prod-1.fork.r1.events");
    expect(t.abort("r1")).toBe("acme.prod-1.fork.r1.abort");
    expect(t.permission("r1")).toBe("acme.prod-1.fork.r1.permission");
    expect(t.toolHost("h")).toBe("acme.prod-1.toolhost.h");
    expect(t.allSpecs).toBe("acme.prod-1.fork.*");
    expect(t.allEvents).toBe("acme.prod-1.fork.*.events");
    expect(t.allAborts).toBe("acme.prod-1.fork.*.abort");
    expect(t.streams).toEqual({ specs: "ACME_PROD_1_FORK_SPECS", events: "ACME_PROD_1_FORK_EVENTS" });
    expect(t.specsConsumer).toBe("acme_prod_1_fork_daemons");
    expect(t.buckets.prefixes).toBe("acme_prod_1_fork_prefixes");
  });

  it("resource names are valid JetStream stream, consumer and bucket names", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_-]{1,8}(\.[A-Za-z0-9_-]{1,8}){0,3}$/), (prefix) => {
        const t = forkSubjects(prefix);
        for (const name of [t.streams.specs, t.streams.events, t.specsConsumer])
          expect(name).toMatch(/^[A-Za-z0-9_-]+$/);
        for (const name of Object.values(t.buckets)) expect(name).toMatch(/^[-\w]+$/);
      }),
    );
  });

  it.each(["", ".", "agent.", ".agent", "a..b", "a b", "a*", "a.>", "a.*.b", "a\tb", "ä", "a/b"])(
    "refuses the prefix %j",
    (prefix) => {
      const error = (() => {
        try {
          forkSubjects(prefix);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ProtocolError);
      expect((error as ProtocolError).code).toBe("invalid_subject_token");
    },
  );

  it("names the bad value and its role in the message", () => {
    expect(() => s.toolHost("a.b")).toThrow(/tool host id "a\.b"/);
    expect(() => s.spec("*")).toThrow(/run id "\*"/);
    expect(() => forkSubjects("a b")).toThrow(
      new ProtocolError("invalid_subject_token", 'subject prefix "a b" is not valid'),
    );
  });

  it("names what a bad value is when it is not a string, and shows at most 80 characters of one", () => {
    expect(() => s.spec(5 as unknown as string)).toThrow(/^run id number is not a single NATS token/);
    const long = `${"x".repeat(80)}!${"y".repeat(100)}`;
    expect(() => s.spec(long)).toThrow(`run id "${"x".repeat(80)}" is not a single NATS token`);
  });
});

describe("the specs stream and the events stream do not overlap", () => {
  const s = forkSubjects();

  it("agent.fork.* and agent.fork.*.events are disjoint; agent.fork.> would capture events", () => {
    expect(overlaps(s.allSpecs, s.allEvents)).toBe(false);
    expect(overlaps("agent.fork.>", s.allEvents)).toBe(true);
    expect(overlaps("agent.fork.>", s.allSpecs)).toBe(true);
  });

  it("aborts, permission requests and tool-host calls are captured by neither stream (core NATS only)", () => {
    for (const filter of [s.allSpecs, s.allEvents]) {
      expect(overlaps(filter, s.allAborts)).toBe(false);
      expect(overlaps(filter, "agent.fork.*.permission")).toBe(false);
      expect(overlaps(filter, "agent.toolhost.*")).toBe(false);
    }
  });

  it("for any run id, each subject matches exactly its own filter", () => {
    fc.assert(
      fc.property(runIdArb, (runId) => {
        expect(matches(s.allSpecs, s.spec(runId))).toBe(true);
        expect(matches(s.allEvents, s.spec(runId))).toBe(false);
        expect(matches(s.allEvents, s.events(runId))).toBe(true);
        expect(matches(s.allSpecs, s.events(runId))).toBe(false);
        expect(matches(s.allAborts, s.abort(runId))).toBe(true);
        for (const subject of [s.abort(runId), s.permission(runId), s.toolHost(runId)]) {
          expect(matches(s.allSpecs, subject)).toBe(false);
          expect(matches(s.allEvents, subject)).toBe(false);
        }
      }),
    );
  });

  it("a run id named like a suffix stays in its own stream", () => {
    expect(matches(s.allSpecs, s.spec("events"))).toBe(true);
    expect(matches(s.allEvents, s.spec("events"))).toBe(false);
  });
});

describe("eventMsgId", () => {
  it("is <run_id>-<seq>", () => {
    expect(eventMsgId("run-1", 7)).toBe("run-1-7");
    expect(eventMsgId("run-1", 1)).toBe("run-1-1");
  });

  it("is unique per (run, seq), even with dashes in run ids: the seq is after the last dash", () => {
    fc.assert(
      fc.property(runIdArb, fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (runId, seq) => {
        const id = eventMsgId(runId, seq);
        const cut = id.lastIndexOf("-");
        expect([id.slice(0, cut), Number(id.slice(cut + 1))]).toEqual([runId, seq]);
      }),
    );
  });

  it.each([0, -1, 1.5, Number.NaN, 2 ** 53])("refuses seq %s", (seq) => {
    expect(() => eventMsgId("r", seq)).toThrow(ProtocolError);
  });

  it("names the bad seq and where it is", () => {
    try {
      eventMsgId("r", 0);
      expect.unreachable();
    } catch (error) {
      expect(error).toMatchObject({
        code: "invalid_event",
        path: ["seq"],
        message: "event seq 0 is not a positive integer",
      });
    }
  });

  it("refuses an invalid run id", () => {
    expect(() => eventMsgId("a.b", 1)).toThrow(/run id/);
  });
});

describe("isValidRunId", () => {
  it("agrees with what the subject builders accept", () => {
    fc.assert(
      fc.property(fc.oneof(runIdArb, fc.string({ maxLength: 130 })), (id) => {
        let built = true;
        try {
          forkSubjects().spec(id);
        } catch {
          built = false;
        }
        expect(isValidRunId(id)).toBe(built);
      }),
    );
  });

  it("refuses non-strings", () => {
    for (const value of [undefined, null, 1, {}, ["a"]]) expect(isValidRunId(value)).toBe(false);
  });
});
