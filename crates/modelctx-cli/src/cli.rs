//! The command line, as clap sees it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

const TARGET_HELP: &str = "\
TARGET is an http(s) URL of a streamable HTTP endpoint (e.g. http://127.0.0.1:8000/mcp; a URL \
answering the old way, e.g. http://127.0.0.1:8000/sse, is spoken to over HTTP+SSE), or the \
command line of a stdio server after `--` (e.g. `-- python server.py`); with `--` the URL is left \
out.";

const ANSWER_HELP: &str = "\
Input requests (elicitation, sampling, roots) are answered in the terminal: forms field by field \
(type `!decline` or `!cancel` at any prompt), URLs after showing the URL as a browser reads it \
with its domain highlighted (and, with a warning, the server's text when it differs) and asking \
consent (the URL is never opened or fetched). Roots default to the \
current directory; sampling runs --llm-cmd once you consent to the prompt shown (--yes: without \
asking; --max-sampling: at most N per request), or is declined. Text from the server is shown \
with control and invisible characters escaped (e.g. \\u{1b}).

For scripts, --answer KEY=JSON (repeatable) and --answers FILE (a JSON object of KEY: JSON) answer \
without asking. KEY names a question, a form field, or a kind of question. A question's key is the \
server's input-request key (shown with URL and sampling questions; the last segment of a key such \
as `__main__:ask_region` will do). A 2025-11-25 server's questions carry no key, so there a \
question's kind is its key: `form`, `url`, `sampling` or `roots` (e.g. `--answer url=accept`); a \
kind answers every question of that kind in either era, unless the question's own key is answered \
too. For a question the JSON is the form content (an object), the value of a one-field form, \
`{\"action\": \"decline\"}`/`{\"action\": \"cancel\"}`, `accept`/`decline`/`cancel` (or \
`true`/`false`) for a URL, the text of a sampling answer, or a list of root paths or URIs. For a \
field it is that field's value; an object named after a form field (`{\"action\": \"decline\"}` or \
the form content) answers the whole form. A value that is not valid JSON is taken as a string. \
Questions the answers do not cover are asked on stdin (line by line when \
stdin is not a terminal); when stdin is closed they are cancelled.";

const APP_HELP: &str = "\
The tool's UI resource (`_meta.ui.resourceUri` of its listing, or the older flat \
`_meta[\"ui/resourceUri\"]`) must be a `ui://` resource of type `text/html;profile=mcp-app`. mcp \
calls the tool, then serves on 127.0.0.1 a host page and, on a second origin (another port), the \
app in a sandboxed iframe under a Content-Security-Policy built from the resource's \
`_meta.ui.csp`: nothing loads or connects anywhere the server did not declare. The page's URL \
is opened in the browser, or printed alone on a line of stdout with --no-open.

While the page is open mcp is the app's host: the app's `tools/call` (only tools whose \
`_meta.ui.visibility` includes \"app\", the default) and `resources/read` go to the server \
through this connection, so the server's questions are asked here as `mcp call` asks them. The \
app's messages (`ui/message`) are printed on stdout, its log messages on stderr; a link it \
asks to open is shown and opened only if you say yes (--answer link=accept says yes to every \
link). Ctrl-C (or --timeout, counted from the connection) tells the app it is being torn down, \
waits a moment for it, and ends the session (exit 0).";

const BRIDGE_HELP: &str = "\
The host (an editor, a desktop app) runs `mcp bridge URL` as its stdio server. The bridge \
connects to the streamable HTTP server at URL with the options of `mcp call` (--mode, --header, \
--oauth and the other sign-in options; sign-in messages go to stderr), and serves the host in \
whichever era it speaks: a 2025-11-25 host in front of a 2026-07-28 server has its `initialize` \
answered from the server's discovery, and the server's questions (elicitation, URL \
elicitation, sampling, roots) asked over the host's back-channel. Cancelling a request on the \
host cancels it upstream; progress, log messages and list changes are relayed. Tasks are not \
relayed yet. --timeout bounds each request the bridge sends upstream.";

/// The longest `--timeout`: about 31 years, far beyond any use, and far from the overflow of
/// `Instant + Duration` (which panics).
const MAX_TIMEOUT_SECS: f64 = 1e9;

/// A positive, finite number of seconds up to [`MAX_TIMEOUT_SECS`] (not 0, negative, NaN, inf or
/// `1e300`, which would panic or silently mean "no timeout"). Not modelctx-seal's TTL parser, which
/// accepts all a `Duration` holds (about 1.8e19 s): a deadline must also fit an `Instant`.
fn seconds(text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0 && *s <= MAX_TIMEOUT_SECS)
        .map(Duration::from_secs_f64)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("expected a positive number of seconds up to {MAX_TIMEOUT_SECS}"))
}

/// `mcp`: talk to any MCP server from the terminal.
#[derive(Debug, Parser)]
#[command(name = "mcp", version, about, long_about = None, max_term_width = 100)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// `defer`: clap builds a subcommand's arguments only when that subcommand is chosen (or its help
/// is asked for). Built eagerly, the whole tree (`ConnectArgs` is flattened into eight commands)
/// cost 0.45 M of the 2.5 M instructions `mcp serve demo` spends before its first answer.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum Command {
    /// List a server's tools.
    #[command(after_help = TARGET_HELP)]
    Tools(ListArgs),
    /// List a server's prompts.
    #[command(after_help = TARGET_HELP)]
    Prompts(ListArgs),
    /// List a server's resources and resource templates.
    #[command(after_help = TARGET_HELP)]
    Resources(ListArgs),
    /// Call a tool: `mcp call [TARGET] TOOL [ARGS_JSON | key=value | key:=JSON …] [-- CMD ARGS…]`.
    #[command(after_help = format!("{TARGET_HELP}\n\nArguments: one JSON object, or key=value \
        pairs (a string, unless the tool's input schema declares another type, then JSON) and \
        key:=JSON pairs (always JSON).\n\n{ANSWER_HELP}"))]
    Call(CallArgs),
    /// Get a prompt: `mcp prompt [TARGET] NAME [key=value …] [-- CMD ARGS…]`.
    #[command(after_help = format!("{TARGET_HELP}\n\n{ANSWER_HELP}"))]
    Prompt(CallArgs),
    /// Read a resource: `mcp read [TARGET] URI [--output FILE] [-- CMD ARGS…]`.
    #[command(after_help = format!("{TARGET_HELP}\n\nText contents are printed up to 64 KiB \
        each; a longer text is summed up in one line (--full prints it), and binary contents \
        (blobs) are never printed. --output FILE writes the contents as they are (text as \
        UTF-8, blobs decoded), whatever their size.\n\n{ANSWER_HELP}"))]
    Read(ReadArgs),
    /// Show a tool's MCP App in the browser: `mcp app [TARGET] TOOL [ARGS_JSON | key=value …]
    /// [-- CMD ARGS…]`.
    #[command(after_help = format!("{TARGET_HELP}\n\nArguments: as for `mcp call`.\n\n{APP_HELP}\n\n\
        {ANSWER_HELP}"))]
    App(AppArgs),
    /// Follow a task to its end: `mcp task [TARGET] TASK_ID [-- CMD ARGS…]`.
    #[command(after_help = format!("{TARGET_HELP}\n\nThe task a `tools/call` became (the id \
        `mcp call` shows as `task ID: …`), followed as `mcp call` follows it: status changes \
        shown, its questions answered, its result printed; Ctrl-C or --timeout cancels it. For a \
        call that was interrupted without cancelling, or a server that restarted with its tasks \
        kept.\n\n{ANSWER_HELP}"))]
    Task(CallArgs),
    /// Follow a server's changes: `mcp listen [TARGET] [--resource URI]… [--lists
    /// tools,prompts,resources] [--task ID]… [-- CMD ARGS…]`.
    #[command(after_help = format!("{TARGET_HELP}\n\nOne line per notification, as it arrives \
        (`--json`: one JSON object per line): `tools/list_changed`, `resources/updated URI`, \
        `task ID STATUS[: message]`, …. The line saying what the server agreed to send goes to \
        stderr. When the server ends the stream gracefully (an instance shutting down), mcp \
        listens again. Stops on Ctrl-C or after --timeout seconds of listening (exit 0)."))]
    Listen(ListenArgs),
    /// Run a server.
    #[command(subcommand)]
    Serve(ServeCommand),
    /// Request-state keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Sealed request state.
    #[command(subcommand)]
    State(StateCommand),
    /// Serve a remote MCP server to a host over stdio: `mcp bridge URL [OPTIONS]`.
    #[command(after_help = BRIDGE_HELP)]
    Bridge(BridgeArgs),
    /// Measure calls/s and latency of one tool against any MCP server.
    #[command(after_help = format!("{TARGET_HELP}\n\nThe calls share one connection; \
        --concurrency keeps that many in flight. A tool that asks for input is answered from \
        --answer/--answers (never interactively), so a bench of it measures whole multi-round \
        flows."))]
    Bench(BenchArgs),
}

// How to connect, and how the connection behaves. (Not a doc comment: clap would make it the
// `about` of every command that flattens this, over the command's own, because `defer` applies
// the arguments after the command's attributes. `every_command_s_help_opens_with_its_own_about`.)
#[derive(Debug, Args, Clone)]
pub(crate) struct ConnectArgs {
    /// Which era to speak: probe with server/discover and fall back to the handshake (auto),
    /// 2026-07-28 only (`2026-07-28`), or the 2025-11-25 handshake (`handshake` or
    /// `2025-11-25`).
    #[arg(long, value_enum, default_value_t = ModeArg::Auto)]
    pub(crate) mode: ModeArg,
    /// Give up after this many seconds once connected (every round and every question
    /// included; connecting counts against --connect-timeout instead). On giving up (or on
    /// Ctrl-C) the server is told: the request in flight is cancelled, a 2025-11-25 HTTP session
    /// ended.
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub(crate) timeout: Option<Duration>,
    /// Give up connecting after this many seconds: starting a stdio server (a Node or Python
    /// server may take seconds, `npx` longer) and the first exchange with the server. Signing
    /// in does not count.
    #[arg(long, value_name = "SECONDS", value_parser = seconds, default_value = "30")]
    pub(crate) connect_timeout: Duration,
    /// The most InputRequiredResult rounds one request may take.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub(crate) max_rounds: u32,
    /// An HTTP header sent with every request (`Name: value`), e.g. an Authorization header.
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    pub(crate) headers: Vec<String>,
    /// Sign in with OAuth when an HTTP server asks (401): the authorization URL is printed and
    /// opened in the browser, the redirect comes back to a listener on 127.0.0.1. Tokens are
    /// kept in --token-store and reused (and refreshed) by later commands. The time spent
    /// signing in does not count against --timeout.
    #[arg(long)]
    pub(crate) oauth: bool,
    /// Sign in without a browser: follow the authorization URL here (implies --oauth). Only
    /// for authorization servers that approve at once, e.g. a local test server. Redirects are
    /// followed within the authorization server's origin only, up to the redirect URI.
    #[arg(long)]
    pub(crate) oauth_headless: bool,
    /// Sign in with this authorization server only (its issuer identifier, exactly as its
    /// metadata states it, e.g. https://auth.example.com). A server that names another one is
    /// refused before anything is sent there. Also needed for an authorization server on a
    /// private network: without it, authorization servers on another host than the MCP
    /// server must have public addresses.
    #[arg(long, value_name = "ISSUER")]
    pub(crate) oauth_issuer: Option<String>,
    /// Fetch the protected resource metadata URL a server's 401 names even when it is on
    /// another origin than the server (https to a public address only). Without it such a
    /// URL is ignored and the server's own well-known location is used.
    #[arg(long)]
    pub(crate) oauth_cross_origin_metadata: bool,
    /// DPoP (RFC 9449): bind tokens to a key of this client, so a leaked token is useless
    /// without it. auto: when the authorization server advertises ES256 proofs; required:
    /// always, and refuse tokens that are not DPoP-bound; off: bearer tokens only.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = DpopUseArg::Auto)]
    pub(crate) oauth_dpop: DpopUseArg,
    /// Workload identity federation: sign in as a workload with the identity token in this
    /// file (e.g. a Kubernetes projected service-account token; read again for every sign-in,
    /// so rotation is picked up), presented with the JWT-bearer grant (RFC 7523). Needs
    /// --oauth-issuer (the token goes to that authorization server only) and --oauth-client-id;
    /// no browser is involved.
    #[arg(long, value_name = "PATH", conflicts_with = "oauth_identity_token_env")]
    pub(crate) oauth_identity_token_file: Option<PathBuf>,
    /// Workload identity federation with the identity token in this environment variable
    /// (see --oauth-identity-token-file).
    #[arg(long, value_name = "VAR")]
    pub(crate) oauth_identity_token_env: Option<String>,
    /// The client ID registered for this workload with --oauth-issuer (with an identity
    /// token flag).
    #[arg(long, value_name = "ID")]
    pub(crate) oauth_client_id: Option<String>,
    /// Where --oauth keeps tokens and client registrations (default: $MCP_TOKEN_STORE, else
    /// $XDG_CONFIG_HOME/mcp/tokens.json, else ~/.config/mcp/tokens.json).
    #[arg(long, value_name = "FILE")]
    pub(crate) token_store: Option<PathBuf>,
    /// The time spent signing in (not counted by --timeout).
    #[arg(skip)]
    pub(crate) sign_in: crate::sign_in_clock::SignInClock,
}

/// `--oauth-dpop`: when the client binds its tokens with DPoP (`client::auth::DpopUse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DpopUseArg {
    /// When the authorization server advertises it.
    Auto,
    /// Always; tokens that are not DPoP-bound are refused.
    Required,
    /// Never.
    Off,
}

// How input requests are answered. (Not a doc comment, as for `ConnectArgs`.)
#[derive(Debug, Args, Clone)]
pub(crate) struct AnswerArgs {
    /// Answer an input request or a form field without asking: KEY=JSON (repeatable).
    #[arg(long = "answer", value_name = "KEY=JSON")]
    pub(crate) answers: Vec<String>,
    /// Answers from a file: a JSON object of KEY: JSON.
    #[arg(long = "answers", value_name = "FILE")]
    pub(crate) answers_file: Option<PathBuf>,
    /// Answer sampling requests by running this shell command: the prompt goes to its stdin,
    /// its stdout is the model's text. Without it sampling requests are declined.
    #[arg(long, value_name = "CMD")]
    pub(crate) llm_cmd: Option<String>,
    /// A root to offer when the server lists roots (repeatable; default: the current
    /// directory).
    #[arg(long = "root", value_name = "PATH")]
    pub(crate) roots: Vec<PathBuf>,
    /// Run --llm-cmd for sampling requests without asking first. Without it the prompt is
    /// shown and each sampling request waits for a yes (declined when nobody can answer).
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// The most sampling requests one request may make (its rounds, its task and, with a
    /// 2025-11-25 server, the requests that arrive while it runs); past it the request fails.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub(crate) max_sampling: u32,
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// [TARGET]: the server's URL (leave it out with `-- CMD ARGS…`).
    #[arg(value_name = "TARGET")]
    pub(crate) positional: Vec<String>,
    /// The stdio server's command line.
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
    /// Print the raw JSON.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) connect: ConnectArgs,
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// [TARGET] NAME [ARGUMENTS…].
    #[arg(value_name = "ARGS", required = true)]
    pub(crate) positional: Vec<String>,
    /// The stdio server's command line.
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
    /// Print the raw JSON result.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) connect: ConnectArgs,
    #[command(flatten)]
    pub(crate) answer: AnswerArgs,
    /// Send this command's traces and metrics to an OpenTelemetry collector at URL over
    /// OTLP/HTTP (e.g. http://localhost:4318; /v1/traces and /v1/metrics are appended). Default:
    /// $OTEL_EXPORTER_OTLP_ENDPOINT; without either nothing is exported. The service name is
    /// mcp-client unless $OTEL_SERVICE_NAME is set.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct AppArgs {
    /// [TARGET] TOOL [ARGUMENTS…].
    #[arg(value_name = "ARGS", required = true)]
    pub(crate) positional: Vec<String>,
    /// The stdio server's command line.
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
    /// Print the host page's URL alone on a line of stdout instead of opening the browser.
    #[arg(long)]
    pub(crate) no_open: bool,
    #[command(flatten)]
    pub(crate) connect: ConnectArgs,
    #[command(flatten)]
    pub(crate) answer: AnswerArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    #[command(flatten)]
    pub(crate) call: CallArgs,
    /// Write the resource's contents to FILE instead of printing them: text as UTF-8, blobs
    /// decoded, several contents one after the other.
    #[arg(long, short = 'o', value_name = "FILE", conflicts_with = "json")]
    pub(crate) output: Option<PathBuf>,
    /// Print text contents of any length (by default one longer than 64 KiB is summed up).
    #[arg(long, conflicts_with = "output")]
    pub(crate) full: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ListenArgs {
    /// [TARGET]: the server's URL (leave it out with `-- CMD ARGS…`).
    #[arg(value_name = "TARGET")]
    pub(crate) positional: Vec<String>,
    /// The stdio server's command line.
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
    /// Follow updates of this resource (repeatable).
    #[arg(long = "resource", value_name = "URI")]
    pub(crate) resources: Vec<String>,
    /// Follow changes of these lists (comma-separated).
    #[arg(long, value_name = "LISTS", value_enum, value_delimiter = ',')]
    pub(crate) lists: Vec<ListKind>,
    /// Follow this task's status (repeatable; the tasks extension).
    #[arg(long = "task", value_name = "ID")]
    pub(crate) tasks: Vec<String>,
    /// Print each notification as a JSON object on one line.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) connect: ConnectArgs,
}

/// A list `mcp listen` can follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ListKind {
    Tools,
    Prompts,
    Resources,
}

#[derive(Debug, Args)]
pub(crate) struct BridgeArgs {
    /// The upstream server's streamable HTTP endpoint.
    #[arg(value_name = "URL")]
    pub(crate) url: String,
    #[command(flatten)]
    pub(crate) connect: ConnectArgs,
}

#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// [TARGET]: the server's URL (leave it out with `-- CMD ARGS…`).
    #[arg(value_name = "TARGET")]
    pub(crate) positional: Vec<String>,
    /// The stdio server's command line.
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
    /// The tool to call.
    #[arg(long, value_name = "NAME")]
    pub(crate) tool: String,
    /// The tool's arguments (a JSON object).
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub(crate) args: String,
    /// How many measured calls.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub(crate) calls: u64,
    /// How many calls are in flight at once.
    #[arg(long, value_name = "C", default_value_t = 1)]
    pub(crate) concurrency: u64,
    /// Unmeasured calls made first (connection set-up, caches).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub(crate) warmup: u64,
    /// Print the figures as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) connect: ConnectArgs,
    #[command(flatten)]
    pub(crate) answer: AnswerArgs,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum ServeCommand {
    /// The demo server: `provision` (asks for the region), `deploy` (two questions in one
    /// round), `summarize` (sampling), `where_am_i` (roots), `connect_account` (a URL), `echo`,
    /// `long_report` (runs as a task: status messages, then asks the format), the `briefing`
    /// prompt and the `report://{quarter}` template (both ask).
    ///
    /// Request state is sealed: with MCP_REQUEST_STATE_KEYS (comma-separated secrets, each at
    /// least 32 bytes; the first mints, all verify) every instance given the same keys accepts
    /// the others' tokens; MCP_REQUEST_STATE_TTL sets their lifetime in seconds (default 600).
    /// Without keys a random per-process key is used.
    Demo(DemoArgs),
}

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Serve streamable HTTP on ADDR (`PORT` or `IP:PORT`, port 0 picks one) at /mcp instead of
    /// stdio; the URL is printed to stderr as `listening on http://…/mcp`.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<String>,
    /// Allow binding a non-loopback address, and accept any Host header (without it only
    /// 127.0.0.1 / ::1 are served, under loopback host names). The Origin check stays on:
    /// browsers may still call only from loopback pages and --allowed-origin.
    #[arg(long)]
    pub(crate) allow_remote: bool,
    /// Also accept requests a browser sends from ORIGIN (repeatable): `https://app.example.com`
    /// exactly, or a bare host name with any scheme and port. Requests without an Origin header
    /// (clients that are not browsers) are always accepted; by default only pages on loopback
    /// names may call.
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
    pub(crate) allowed_origins: Vec<String>,
    /// Serve one protocol era only: `2026-07-28` (`initialize` is refused with -32022 naming
    /// the versions served) or `2025-11-25` (as a server that predates 2026-07-28: the request
    /// envelope is ignored and `server/discover` is an unknown method). Default: both, each
    /// client's era chosen by how it opens.
    #[arg(long, value_name = "VERSION")]
    pub(crate) protocol: Option<ProtocolArg>,
    /// Also serve the HTTP+SSE transport of 2024-11-05 beside /mcp, for clients of that era:
    /// `GET /sse` opens a session's event stream, its messages are POSTed to `/messages`.
    #[arg(long, requires = "http")]
    pub(crate) sse: bool,
    /// Keep `long_report`'s tasks in this SQLite file (they survive a restart) instead of in
    /// memory. A new file is created readable and writable by you only (mode 0600).
    #[arg(long, value_name = "FILE")]
    pub(crate) tasks_db: Option<PathBuf>,
    /// Join the change bus of a fleet on Redis (`redis://HOST:PORT`): resource updates and list
    /// changes made on any instance reach the listeners of every instance (`mcp listen`).
    #[arg(long, value_name = "URL")]
    pub(crate) bus: Option<String>,
    /// The bus channel's prefix (`PREFIX:changes`): instances with the same prefix form a fleet.
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "mcp-demo",
        requires = "bus"
    )]
    pub(crate) bus_prefix: String,
    /// Require OAuth access tokens (JWTs) issued by ISSUER, the authorization server's issuer
    /// identifier (HTTP only). The server then publishes its protected resource metadata and
    /// answers requests without a valid token with 401.
    #[arg(long, value_name = "ISSUER", requires = "http")]
    pub(crate) auth_issuer: Option<String>,
    /// The issuer's key set (default: the `jwks_uri` of its authorization server metadata).
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub(crate) auth_jwks: Option<String>,
    /// A scope every token must carry (repeatable).
    #[arg(long = "auth-scope", value_name = "SCOPE", requires = "auth_issuer")]
    pub(crate) auth_scopes: Vec<String>,
    /// This server's canonical URI, the audience tokens must be issued for (default:
    /// `http://ADDR/mcp` of the bound address).
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub(crate) auth_resource: Option<String>,
    /// Accept DPoP-bound tokens (RFC 9449): `allowed` takes them next to bearer tokens,
    /// `required` takes nothing else. Each request's proof is checked (method, URL, token, time,
    /// replay); the metadata advertises ES256. A DPoP-bound token sent as a bearer token is
    /// always refused.
    #[arg(long, value_name = "MODE", requires = "auth_issuer")]
    pub(crate) auth_dpop: Option<DpopPolicyArg>,
    /// Demand a nonce this server issued in every DPoP proof (`use_dpop_nonce`), fresh every
    /// 5 minutes.
    #[arg(long, requires = "auth_dpop")]
    pub(crate) auth_dpop_nonce: bool,
    /// Send the server's traces and metrics to an OpenTelemetry collector at URL over
    /// OTLP/HTTP (e.g. http://localhost:4318; /v1/traces and /v1/metrics are appended). Default:
    /// $OTEL_EXPORTER_OTLP_ENDPOINT; without either nothing is exported. The service name is
    /// mcp-demo-server unless $OTEL_SERVICE_NAME is set.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
    /// On SIGTERM or SIGINT the server stops taking requests, ends listen streams with their
    /// closing result and gives the requests in flight this many seconds to answer (default 5;
    /// those still running are then dropped), then sends its telemetry and exits 0. Keep it
    /// below the time your supervisor waits before SIGKILL (docker stop: 10 s).
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub(crate) shutdown_grace: Option<Duration>,
}

/// `mcp serve demo --protocol`: the one era served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProtocolArg {
    /// 2026-07-28 only.
    #[value(name = "2026-07-28")]
    Modern,
    /// 2025-11-25 only (the handshake era).
    #[value(name = "2025-11-25")]
    Handshake,
}

impl ProtocolArg {
    /// The era this revision belongs to.
    pub(crate) fn era(self) -> modelctx::types::Era {
        match self {
            Self::Modern => modelctx::types::Era::Modern,
            Self::Handshake => modelctx::types::Era::Handshake,
        }
    }
}

/// `--auth-dpop`: the demo server's DPoP policy (`server::auth::DpopPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DpopPolicyArg {
    /// DPoP-bound and bearer tokens.
    Allowed,
    /// DPoP-bound tokens only.
    Required,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum KeysCommand {
    /// Print a fresh random 32-byte key (64 hex digits), for MCP_REQUEST_STATE_KEYS.
    Generate,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum StateCommand {
    /// Open a sealed requestState token and print its claims (why was it rejected?).
    Inspect(InspectArgs),
}

#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// A secret of the server's key ring (repeatable, or comma-separated as in
    /// MCP_REQUEST_STATE_KEYS, which is read when no --key is given).
    #[arg(long = "key", value_name = "K")]
    pub(crate) keys: Vec<String>,
    /// Check the token's argument digest against these tool arguments (a JSON object).
    #[arg(long, value_name = "JSON")]
    pub(crate) args: Option<String>,
    /// Print only the claims JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// The token (`v1.…`).
    pub(crate) token: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ModeArg {
    /// Probe with server/discover, fall back to the handshake.
    Auto,
    /// 2026-07-28 without probing (also `modern`).
    #[value(name = "2026-07-28", alias = "modern")]
    Modern,
    /// The 2025-11-25 initialize handshake (also `2025-11-25`, and `legacy`, its name before).
    // Named by the era like `auto`'s fallback, and by the revision like `2026-07-28`: users
    // type either, and scripts written before the rename still say `legacy`.
    #[value(aliases = ["2025-11-25", "legacy"])]
    Handshake,
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory as _, Parser as _};

    use super::{Cli, Command, KeysCommand, ModeArg, ServeCommand, StateCommand};

    fn mode_of(args: &[&str]) -> ModeArg {
        let cli = Cli::try_parse_from(args).expect("parses");
        match cli.command {
            Command::Tools(args) => args.connect.mode,
            other => panic!("not `tools`: {other:?}"),
        }
    }

    /// The handshake era is `--mode handshake` or `--mode 2025-11-25` (as the other era is
    /// `--mode 2026-07-28` or `--mode modern`); `--mode legacy`, its name before, still works in
    /// users' scripts.
    #[test]
    fn each_era_is_named_by_its_revision_and_its_name() {
        for (value, mode) in [
            ("handshake", ModeArg::Handshake),
            ("2025-11-25", ModeArg::Handshake),
            ("legacy", ModeArg::Handshake),
            ("2026-07-28", ModeArg::Modern),
            ("modern", ModeArg::Modern),
            ("auto", ModeArg::Auto),
        ] {
            assert_eq!(
                mode_of(&["mcp", "tools", "--mode", value, "http://x"]),
                mode,
                "{value}"
            );
        }
        assert_eq!(mode_of(&["mcp", "tools", "http://x"]), ModeArg::Auto);
        assert!(Cli::try_parse_from(["mcp", "tools", "--mode", "2024-11-05", "http://x"]).is_err());
    }

    /// clap's debug assertions hold for every (deferred) subcommand: names, conflicts, groups.
    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    /// With `defer`, a command's arguments are applied after its own attributes: a doc comment on
    /// a flattened `Args` struct would replace the command's `about` in its help. Each command's
    /// help opens with the about its enum variant gives it (read before anything is built, as the
    /// parent's command list shows it).
    #[test]
    fn every_command_s_help_opens_with_its_own_about() {
        use clap::Subcommand;

        let levels: [(&[&str], clap::Command); 4] = [
            (&[], Command::augment_subcommands(clap::Command::new("mcp"))),
            (
                &["serve"],
                ServeCommand::augment_subcommands(clap::Command::new("serve")),
            ),
            (
                &["keys"],
                KeysCommand::augment_subcommands(clap::Command::new("keys")),
            ),
            (
                &["state"],
                StateCommand::augment_subcommands(clap::Command::new("state")),
            ),
        ];
        for (path, listing) in &levels {
            for sub in listing.get_subcommands() {
                let about = sub
                    .get_about()
                    .map(ToString::to_string)
                    .expect("every command has an about");
                let mut argv = vec!["mcp"];
                argv.extend(path.iter().copied());
                argv.extend([sub.get_name(), "-h"]);
                let help = Cli::try_parse_from(&argv)
                    .expect_err("-h ends the parse")
                    .to_string();
                assert_eq!(help.lines().next(), Some(about.as_str()), "{argv:?}");
            }
        }
        // Every command with subcommands is one of the levels above.
        let mut cli = Cli::command();
        cli.build();
        for sub in cli
            .get_subcommands()
            .filter(|sub| sub.has_subcommands() && sub.get_name() != "help")
        {
            assert!(
                levels.iter().any(|(path, _)| path == &[sub.get_name()]),
                "{}",
                sub.get_name()
            );
            assert!(
                sub.get_subcommands()
                    .all(|leaf| !leaf.has_subcommands() || leaf.get_name() == "help")
            );
        }
    }
}
