// The help text of `forkd` and of each command. Kept in one place, without loading any command, so
// that `--help` is instant; docs/cli.md says the same at length.

/** The commands of `forkd`, in the order the help lists them. */
export const COMMAND_NAMES = [
  "daemon",
  "fork",
  "watch",
  "ps",
  "abort",
  "steer",
  "budget",
  "sim",
  "demo",
  "models",
  "proxy",
  "capture",
  "mcp",
  "web",
] as const;

/** A command name. */
export type CommandName = (typeof COMMAND_NAMES)[number];

/** True when `name` is a command. */
export function isCommandName(name: string): name is CommandName {
  return (COMMAND_NAMES as readonly string[]).includes(name);
}

const NATS_OPTIONS = `NATS options (also taken from the environment, see docs/cli.md):
  --nats URL[,URL]     NATS servers (repeatable)   env FORKD_NATS_URL, NATS_URL; default nats://127.0.0.1:4222
  --nats-user USER     --nats-pass PASS            env NATS_USER, NATS_PASSWORD
  --nats-pass-file FILE  the password from a file  env NATS_PASSWORD_FILE (--nats-pass shows in ps)
  --nats-token TOKEN                               env NATS_TOKEN
  --nats-creds FILE    --nats-nkey FILE            env NATS_CREDS, NATS_NKEY_SEED_FILE
  --nats-tls-ca FILE   --nats-tls-cert FILE   --nats-tls-key FILE
  --prefix PREFIX      subject prefix              env FORKD_PREFIX; default agent`;

const COMMON = `  -h, --help           show this help
  --verbose            print stack traces with errors`;

const EXIT_CODES_TEXT = `Exit codes: 0 ok · 1 a run failed, timed out or was aborted · 2 usage or configuration error ·
3 NATS unavailable · 4 run not found · 5 model provider error · 70 internal error · 130 interrupted`;

/** One line per command, for `forkd --help`. */
export const SUMMARIES: Record<CommandName, string> = {
  daemon: "run a worker daemon that pulls fork specs from NATS and runs them",
  fork: "fork children from a parent turn stored as JSON, and follow them",
  watch: "replay and follow every run (or one) live",
  ps: "list runs and daemons from the registry",
  abort: "abort a run, or every run of a group or a parent (--stop: gracefully)",
  steer: "add a user message to a running child at its next turn",
  budget: "show or raise a group's shared budget (paused runs resume)",
  sim: "run the Anthropic API simulator",
  demo: "the whole thing on one machine: NATS, simulator, 3 daemons, 5 forks, the bill",
  models: "what forkd knows of each model: prices, minimum cacheable prompt, context window",
  proxy: "an Anthropic API proxy that lets any agent's fork calls run on the cluster",
  capture: "the proxy, writing each turn it sees as a parent-turn file for forkd fork --from",
  mcp: "the fork tools (fork, fork_status, fork_result, fork_abort) as an MCP server on stdio",
  web: "a live web view of every run, cost and daemon, in the browser (NATS over WebSocket)",
};

const MAIN = `forkd — run LLM fork sub-agents on a cluster of daemons over NATS JetStream

Usage: forkd <command> [options]

Commands:
${Object.entries(SUMMARIES)
  .map(([name, summary]) => `  ${name.padEnd(8)} ${summary}`)
  .join("\n")}

Options:
  -h, --help           show help (also after a command: forkd fork --help)
  --version            print the version

${EXIT_CODES_TEXT}
Documentation: docs/cli.md`;

const HELP: Record<CommandName, string> = {
  daemon: `forkd daemon — run a worker daemon

Usage: forkd daemon [options]

Pulls fork specs from the shared work queue, runs each child's turn loop against the Anthropic API
(ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY, as the SDK reads them: the real API or \`forkd sim\`),
publishes its events, and obeys aborts. SIGTERM or Ctrl-C drains (runs may finish within
--drain-grace, the rest go back to the queue); a second signal stops at once.

Options (each also as an environment variable; flags win; a JSON file with --config comes last):
  --config FILE            JSON configuration file                  FORKD_CONFIG
  --nats URL[,URL]         NATS servers (repeatable)                FORKD_NATS_URL, NATS_URL
  --nats-user, --nats-pass, --nats-pass-file, --nats-token, --nats-creds, --nats-nkey,
  --nats-tls-ca, --nats-tls-cert, --nats-tls-key                   NATS_USER, NATS_PASSWORD, NATS_PASSWORD_FILE,
                                                                    NATS_TOKEN, NATS_CREDS, NATS_NKEY_SEED_FILE, NATS_TLS_*
  --max-run-time MS, --max-turns N, --max-output-tokens N         FORKD_MAX_RUN_MS, FORKD_MAX_TURNS,
                           ceilings no spec can exceed              FORKD_MAX_OUTPUT_TOKENS
  --id ID                  daemon id (default <host>-<pid>)         FORKD_DAEMON_ID
  --prefix PREFIX          subject prefix (default agent)           FORKD_PREFIX
  --replicas N|auto        stream replicas (default auto)           FORKD_REPLICAS
  --concurrency N          runs at once (default 4)                 FORKD_CONCURRENCY
  --call-limit-per-key N   model calls at once per provider key,   FORKD_CALL_LIMIT_PER_KEY
                           shared by every daemon of the account
  --call-limit-per-model N model calls at once per model, shared   FORKD_CALL_LIMIT_PER_MODEL
  --call-limit-per-tenant N  model calls at once of the tenant      FORKD_CALL_LIMIT_PER_TENANT
  --tenant ID              the tenant the calls count for           FORKD_TENANT
  --call-limit-lease MS    a dead daemon's slots come back after    FORKD_CALL_LIMIT_LEASE_MS
                           (default 30000)
  --workspace DIR          where tools work (default: cwd)          FORKD_WORKSPACE
  --ack-wait MS            redelivery after silence (default 30000) FORKD_ACK_WAIT_MS
  --max-deliver N          deliveries of one spec (default 5)       FORKD_MAX_DELIVER
  --allowed-models LIST    models a spec may use (default any)      FORKD_ALLOWED_MODELS
  --default-model MODEL    for specs without a prefix               FORKD_DEFAULT_MODEL
  --bash read-only|full|off  the Bash tool (default read-only)      FORKD_BASH_POLICY
  --bash-timeout MS        longest Bash command (default 120000)    FORKD_BASH_TIMEOUT_MS
  --bash-sandbox MODE      bwrap (default) or off: where Bash runs  FORKD_BASH_SANDBOX
  --drain-grace MS         drain time on SIGTERM (default 30000)    FORKD_DRAIN_GRACE_MS
  --heartbeat MS           registry heartbeat (default 5000)        FORKD_HEARTBEAT_MS
  --presence MS            presence beat (default 250)              FORKD_PRESENCE_MS
  --failover-after MS      a daemon silent this long is gone and its runs move at once;
                           0 leaves them to ack_wait (default 1000) FORKD_FAILOVER_AFTER_MS
  --retention MS           finished runs' entries and events are kept
                           this long (default 21600000 = 6 h)       FORKD_RETENTION_MS
  --prefix-retention MS    unused stored prefixes are kept this
                           long (default 3600000 = 1 h)             FORKD_PREFIX_RETENTION_MS
  --metrics-port N         Prometheus /metrics (default off; 0 any) FORKD_METRICS_PORT
  --metrics-host ADDR      (default 127.0.0.1)                      FORKD_METRICS_HOST
  --log-level LEVEL        trace … fatal, silent (default info)     FORKD_LOG_LEVEL
  --log-format FORMAT      json, pretty or auto (default auto:      FORKD_LOG_FORMAT
                           pretty when stderr is a terminal)
  --llm-base-url URL       instead of ANTHROPIC_BASE_URL
  --llm-max-retries N      retries of a model call (default 4)      FORKD_LLM_MAX_RETRIES
${COMMON}

Examples:
  ANTHROPIC_API_KEY=sk-ant-… forkd daemon --nats nats://nats:4222 --concurrency 8
  ANTHROPIC_BASE_URL=http://127.0.0.1:4010 ANTHROPIC_API_KEY=sim forkd daemon --log-format pretty

${EXIT_CODES_TEXT}`,

  fork: `forkd fork — fork children from a parent turn, and follow them

Usage: forkd fork --from FILE [--directive TEXT]... [options]

Each --directive starts one child that inherits the parent's whole conversation (the stored
request and reply) and gets the directive as its task. Children are launched warm-first: the first
one writes the shared cache entry, the others start once its response has begun. The i-th child
answers the reply's i-th tool_use (its label and description come from it). Without --directive,
the prompts of the reply's tool calls are the directives.

Options:
  --from FILE          the parent turn: JSON { request, response } (the fixtures' shape)   required
  --directive TEXT     one child's task (repeatable)
  --label TEXT         label of the children (shown by ps and watch; numbered when several)
  --max-turns N        model turns each child may take (default: the daemon's, 200)
  --timeout DURATION   wall-clock limit of each child, e.g. 90s, 5m (default none)
  --parent-id ID       the parent agent's id in the registry (default forkd-cli@<host>)
  --no-wait            print the run ids once the specs are published, and exit
  --json               print events and results as NDJSON on stdout
${COMMON}

${NATS_OPTIONS}

Output: on a terminal, a live line per child; otherwise one line per event (deltas and heartbeats
left out). At the end, each child's status, usage and final text. With --json, one JSON object per
line: {"kind":"event","child":N,…event} for every event and {"kind":"result","child":N,…} per
child; with --no-wait, {"kind":"launched","child":N,"run_id":…}. Ctrl-C aborts the children.

Examples:
  forkd fork --from turn.json --directive "Audit the codec" --directive "Write the tests"
  forkd fork --from turn.json --directive "Summarise the design" --json | jq -c 'select(.kind=="result")'
  forkd fork --from turn.json --directive "Long job" --no-wait

Exit codes: 0 every child completed · 1 a child failed, timed out or was aborted · 2 usage ·
3 NATS unavailable · 130 interrupted`,

  watch: `forkd watch — replay and follow runs

Usage: forkd watch [RUN_ID] [options]

Without RUN_ID: every run's events, replayed from the start of the event stream (or --since) and
then live, grouped by run, until Ctrl-C. With RUN_ID: that run's events from its first, until it
ends.

Options:
  --since DURATION     only events newer than this, e.g. 10m, 2h (all runs only; default: all)
  --json               one event per line as NDJSON ({"kind":"event",…event}), no live view
${COMMON}

${NATS_OPTIONS}

Output: on a terminal, a live view with one line per run: status, daemon, turn, tokens, share of
the input read from the cache, cost, elapsed; otherwise one line per event.

Examples:
  forkd watch
  forkd watch --since 15m --json | jq -c 'select(.type=="llm.message") | .usage'
  forkd watch 0193f1c2-…

Exit codes: 0 ok (all runs: stopped with Ctrl-C; one run: it completed) · 1 the run failed, timed
out or was aborted · 3 NATS unavailable · 4 no such run · 130 interrupted before the run ended`,

  ps: `forkd ps — runs and daemons

Usage: forkd ps [options]

Reads the registry (JetStream KV): daemons with their host, load/capacity, state, version and
heartbeat age; the retention the sweeping daemon applies; runs with their status, attempt, daemon,
label, age, tokens and cost (tokens and cost are recorded when a run ends), newest first. By
default: every queued and running run and the N most recently written, read without a scan of the
registry (its time does not grow with the finished runs it holds).

Options:
  --status LIST        only runs with these statuses: queued,running,completed,failed,aborted
  --limit N            the N most recently written runs (default 50), and at most N rows
  --parent AGENT_ID    the runs of one parent agent (its parent.agent_id)
  --all                every stored run (reads the whole registry)
  --json               {"daemons":[…],"runs":[…],"retention":{…}|null} as registry entries
${COMMON}

${NATS_OPTIONS}

Examples:
  forkd ps
  forkd ps --status running,queued
  forkd ps --parent my-agent --json
  forkd ps --all --json | jq '.runs | length'
  forkd ps --json | jq '.daemons[] | {daemon_id, load, capacity}'

Exit codes: 0 ok · 2 usage · 3 NATS unavailable`,

  abort: `forkd abort — abort a run, or every run of a group or a parent

Usage: forkd abort RUN_ID [options]
       forkd abort --group GROUP_ID [--stop] [options]
       forkd abort --parent AGENT_ID [--stop] [options]

Sends the abort on the fast path (core NATS, the daemon stops within milliseconds) and flags the
run in the registry (a spec picked up later is not run), then waits for the run to end. With
--group or --parent, every run of the group or the parent that has not ended, queued ones
included (a queued run ends at once, without running). Only runs forked with the same owner key
(FORKD_OWNER_KEY) obey.

Options:
  --group GROUP_ID     every run of the group (a fan-out is one; see forkd ps)
  --parent AGENT_ID    every run of the parent agent
  --stop               graceful: the current model turn or tool finishes, nothing new starts, the
                       run ends completed with what it has (with --group or --parent)
  --reason TEXT        why (recorded in the aborted event; default "aborted with forkd abort")
  --timeout DURATION   how long to wait for the run(s) to end (default 10s)
  --no-wait            do not wait for the run(s) to end
${COMMON}

${NATS_OPTIONS}

Examples:
  forkd abort 0193f1c2-… --reason "wrong directive"
  forkd abort --parent my-agent
  forkd abort --group 0193f1c0-… --stop --reason "enough"

Exit codes: 0 the abort was sent (or the run had already ended) · 2 usage · 3 NATS unavailable ·
4 no such run`,

  steer: `forkd steer — add a user message to a running child

Usage: forkd steer RUN_ID TEXT [options]

The daemon running the run takes the message and adds it at the run's next turn boundary (after
the model turn or the tools in progress), with a steered event the log keeps (a run resumed
elsewhere has it). Waits for that event unless --no-wait. Only the run's owner key may steer.

Options:
  --by NAME            who sends it (recorded in the event; default cli)
  --timeout DURATION   how long to wait for the steered event (default 60s)
  --no-wait            return once the daemon took the message
${COMMON}

${NATS_OPTIONS}

Examples:
  forkd steer 0193f1c2-… "Also check the codec's size limits."

Exit codes: 0 taken · 1 the run ended before its next turn · 2 usage, or refused (another owner) ·
3 NATS unavailable · 4 no daemon runs it now`,

  budget: `forkd budget — show or set a group's shared budget

Usage: forkd budget GROUP_ID [--usd N] [--tokens N] [options]

Without a cap, shows the group's spend and cap. With one, sets it (keeping the other bound and
what was spent): at the cap the group's runs pause at their next turn boundary; a raised cap
resumes them. Signed with the owner key (FORKD_OWNER_KEY): runs of another key pause rather than
obey it.

Options:
  --usd N              cap in US dollars, priced per model
  --tokens N           cap in tokens (input of every kind plus output)
  --json               print the budget entry as JSON
${COMMON}

${NATS_OPTIONS}

Examples:
  forkd budget 0193f1c0-…
  forkd budget 0193f1c0-… --usd 5

Exit codes: 0 ok · 2 usage · 3 NATS unavailable · 4 the group has no budget`,

  models: `forkd models — the per-model facts forkd prices, caches and checks by

Usage: forkd models [MODEL] [options]

Without MODEL, lists every model family forkd knows; with MODEL (any id, e.g. a dated or
provider-qualified one), shows the row it resolves to. Prices include a FORKD_PRICES file's rows.
A model forkd does not know is unpriced, never billed as $0.

Options:
  --beta NAME          a beta the request is sent with (repeatable); context-1m-2025-08-07 opens
                       the 1M window of the models that have it
  --json               print the facts as JSON
${COMMON}

Examples:
  forkd models
  forkd models us.anthropic.claude-sonnet-4-6-v1:0 --beta context-1m-2025-08-07

Exit codes: 0 ok · 2 usage`,

  proxy: `forkd proxy — an Anthropic and OpenAI API proxy that lets any agent's fork calls run on the cluster

Usage: forkd proxy [options]

Forwards every request and response unchanged (streams, headers, betas, errors, aborts) to the
upstream API — requests under /openai/ to the OpenAI upstream, that prefix replaced by its base
URL; every other request to the Anthropic upstream — and remembers each agent session's last turns, so that \`forkd mcp\`'s fork tool forks
exactly the turn that called it. Prints its URL as the first line of stdout and writes its URL and
control token to a state file only you can read, where \`forkd mcp\` finds them. It sees the API keys
agents send: it listens on loopback unless told otherwise. See docs/any-agent.md.

Options:
  --upstream URL       the Anthropic API to forward to (default ${"https://api.anthropic.com"})
  --openai-upstream URL
                       the OpenAI(-compatible) base URL, /v1 or the provider's path included,
                       for OpenAI agents, whose base URL is <proxy>/openai
                       (default ${"https://api.openai.com/v1"})
  --gemini-upstream URL
                       the Gemini API for Gemini agents, whose base URL is <proxy>/gemini
                       (GOOGLE_GEMINI_BASE_URL; default ${"https://generativelanguage.googleapis.com"})
  --listen HOST:PORT   where to listen (default 127.0.0.1:4080; :0 picks a free port)
  --state FILE         where to write the URL and control token  env FORKD_PROXY_STATE;
                       default $XDG_STATE_HOME/forkd/proxy.json (~/.local/state/forkd/proxy.json)
  --keep-turns N       turns kept per session (default 8)
  --log-level LEVEL    trace … fatal, silent (default warn: an upstream it could not
                       reach, a turn it could not record or write; info adds a line
                       per proxied call)                        FORKD_LOG_LEVEL
  --log-format FORMAT  json, pretty or auto (default auto: pretty when stderr is a
                       terminal)                                FORKD_LOG_FORMAT
  --json               print {url, upstream, openaiUpstream, geminiUpstream, state} as JSON
${COMMON}

Examples:
  forkd proxy &
  ANTHROPIC_BASE_URL=http://127.0.0.1:4080 claude --mcp-config forkd-mcp.json
  forkd proxy --openai-upstream https://dashscope.aliyuncs.com/compatible-mode/v1 &
  OPENAI_BASE_URL=http://127.0.0.1:4080/openai qwen
  GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:4080/gemini gemini

Exit codes: 0 stopped by Ctrl-C or SIGTERM · 2 usage (e.g. the port is taken)`,

  capture: `forkd capture — the proxy, writing each turn as a parent-turn file

Usage: forkd capture DIR [options]

\`forkd proxy\` that also writes each turn it sees to DIR/<session>/<n>.json (mode 0600: they hold
the conversation) and prints each path: an Anthropic turn as { request, response, betas }, an OpenAI
or Gemini turn as { api, path, request, response }. Try forkd on a real session of your own:
capture a turn, then \`forkd fork --from DIR/<session>/<n>.json --directive "…"\`.

Options: as forkd proxy (--upstream, --openai-upstream, --gemini-upstream, --listen, --state, --keep-turns,
--log-level, --log-format, --json). A turn whose file cannot be written is logged on stderr.

Examples:
  forkd capture ./turns --upstream https://api.anthropic.com

Exit codes: 0 stopped by Ctrl-C or SIGTERM · 2 usage`,

  mcp: `forkd mcp — the fork tools as an MCP server on stdio

Usage: forkd mcp [options]

Serves fork, fork_status, fork_result and fork_abort over MCP on stdin/stdout, for an agent that
reaches the model through \`forkd proxy\`. A fork call forks the exact turn that made it; several fork
calls in one reply start as one warm-first fan-out. Started by the agent, from its MCP config:
  {"mcpServers":{"forkd":{"command":"forkd","args":["mcp"]}}}

Options:
  --proxy URL          the proxy's URL (default: the one in the proxy's state file); its control
                       token is FORKD_PROXY_TOKEN or the state file's
  --state FILE         the proxy's state file   env FORKD_PROXY_STATE
  --max-turns N        each child's model turns
  --timeout DURATION   each child's time limit (e.g. 10m)
${COMMON}

${NATS_OPTIONS}

Exit codes: 0 the client closed the session · 2 usage · 3 NATS unavailable`,

  sim: `forkd sim — run the Anthropic API simulator

Usage: forkd sim [options]

An Anthropic-compatible HTTP server with a scripted model and the provider's prompt-cache rules
(see docs/simulator.md). Prints its URL as the first line of stdout, then serves until Ctrl-C or
SIGTERM. Point daemons at it with ANTHROPIC_BASE_URL=<url> and any ANTHROPIC_API_KEY.

Options:
  --port N             port (default 0: any free port)
  --host ADDR          address (default 127.0.0.1)
  --ttft MS            time to first token of every response (default 0)
  --tps N              output tokens per second (default 0: no pacing)
  --log FILE           append the request log to FILE as JSON lines
  --json               print {"url":…,"port":…} instead of the bare URL
${COMMON}

Examples:
  forkd sim --port 4010 --ttft 300 --tps 400
  ANTHROPIC_BASE_URL=$(forkd sim …)   # or read the first line of its output

Exit codes: 0 stopped by a signal · 2 usage (bad flag, port in use)`,

  demo: `forkd demo — forks on one machine, and what they save

Usage: forkd demo [options]

Finds NATS (NATS_URL, else a server on localhost:4222, else a nats-server binary it starts in a
temp dir, else Docker), starts the simulator and three daemons in this process, sends the parent's
request once (it writes the prompt cache), forks five children from a 48k-token parent turn
warm-first, shows them live, then sends each child's whole context again as a fresh request
without cache (what an agent without forks pays) and prints the bill: per child input, cache
write, cache read, output and cost, the total, the same work without forking, and the saving.
Everything it started is stopped and removed at the end, on error and on Ctrl-C.

Options:
  --from FILE          parent turn JSON { request, response } (default: the 48k fixture)
  --children N         children to fork (default 5)
  --daemons N          daemons to start (default 3)
  --ttft MS            simulator: time to first token (default 300)
  --tps N              simulator: output tokens per second (default 400)
  --model MODEL        use this model instead of the parent turn's
  --nats URL           use this NATS server (as NATS_URL does)
  --start-nats         always start a private nats-server (ignore NATS_URL and localhost:4222)
  --log FILE           write the daemons' logs (JSON lines) to FILE (default: no logs)
  --json               print the bill as JSON instead of the live view and table
  --real               use the real Anthropic API (ANTHROPIC_API_KEY; costs money) instead of the simulator
  --yes                with --real: do not ask for confirmation
  --web                also serve the live web view (forkd web) and print its URL; the demo then
                       starts a nats-server of its own with WebSocket on, forks once a page has
                       loaded (at most 30 s later), and waits for Ctrl-C after the bill so that
                       the page stays up
  --web-port PORT      port of the web view (default 4280; 0 picks a free one)
  --provider API       anthropic (default), openai-chat, openai-responses or gemini: the children run
                       on that API of the simulator, with its provider's caching rules (model gpt-5,
                       or gemini-2.5-flash, unless --model; on Gemini the children share one
                       explicit cache of the parent's prefix)
${COMMON}

Examples:
  pnpm demo
  forkd demo --web
  forkd demo --children 8 --tps 200
  forkd demo --provider openai-responses
  forkd demo --provider gemini
  ANTHROPIC_API_KEY=sk-ant-… forkd demo --real --children 3

Exit codes: 0 every child completed · 1 a child failed · 2 usage · 3 no NATS and no way to start
one · 5 the model provider failed · 130 interrupted`,

  web: `forkd web — the live web view

Usage: forkd web [options]

Serves a single-page view of every run on loopback (static files built into @forkd/web: no CDN,
works offline) and prints its URL. The page connects to NATS itself over WebSocket, with the
credentials given here (use the read-only observer user), and shows runs grouped by parent, live;
one run's event log from seq 1 then live, with the model's text streaming; cost per group beside
the cost without forking; daemons with their slots, load and health. An abort button appears only
when the credentials may publish aborts. docs/web.md has the details and screenshots.

Options:
  --nats-ws URL[,URL]  NATS WebSocket URLs (repeatable)  env FORKD_NATS_WS_URL; default ws://127.0.0.1:4443
  --nats-user USER     --nats-pass PASS                  env NATS_USER, NATS_PASSWORD
  --nats-pass-file FILE                                  env NATS_PASSWORD_FILE
  --nats-token TOKEN                                     env NATS_TOKEN
  --prefix PREFIX      subject prefix                    env FORKD_PREFIX; default agent
  --host HOST          interface to serve on (default 127.0.0.1; with credentials only loopback)
  --port PORT          port to serve on (default 4280; 0 picks a free one)
  --allowed-host NAME  a host name the page may be asked for besides addresses and localhost (repeatable)
  --controls           give the page your owner key, so that its abort buttons can stop your runs
  --json               print {"url","port","nats_ws"} instead of the URL
${COMMON}

The credentials are handed to the page in /config.json: anyone who can reach the port gets them.
Keep it on loopback; reach a remote one through an SSH tunnel.

Examples:
  forkd web --nats-user observer --nats-pass-file ~/.config/forkd/observer-pass
  forkd demo --web

Exit codes: 0 stopped with Ctrl-C · 2 usage (bad URL, port taken, credentials on a public
interface)`,
};

/** The help of `forkd`, or of one command. */
export function helpText(command?: CommandName): string {
  return command === undefined ? MAIN : HELP[command];
}
