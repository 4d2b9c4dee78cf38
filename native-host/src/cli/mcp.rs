//! `errand mcp`: Errand as a Model Context Protocol server (the official
//! Rust SDK, `rmcp`), over stdio (the default) or streamable HTTP on
//! 127.0.0.1 (`--http`).
//!
//! The tools run in the host's tools layer (`crate::tools`), never here:
//! - by default, in the native host Chrome started for the user's own
//!   browser: this process connects to its Unix socket
//!   (`crate::host::mcp`) and forwards each call as a `tool_call`;
//! - with `--launch`, in this process, on a headless Chromium of its own
//!   (as `errand run` starts one).
//!
//! Over HTTP every request needs `Authorization: Bearer <token>` (a random
//! per-install token in `mcp-token` in the data folder, 0600), and any
//! request carrying an `Origin` header (a browser page) is refused with 403;
//! no CORS headers are sent.
//!
//! `errand mcp install --client …` writes the client's config entry.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand, ValueEnum};
use errand_protocol::{Body, Envelope};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::{Mutex, OnceCell};

use crate::cli::commands::{Connected, connect};
use crate::cli::term;
use crate::config::{Overrides, Settings};
use crate::host::Host;
use crate::host::mcp::{socket_path, write_frame};
use crate::host::transport;
use crate::tools::{Reply, Session, tool_list};

/// `errand mcp`'s options.
#[derive(Debug, Clone, Default, Args)]
pub struct McpArgs {
    /// Start Errand's own headless Chromium instead of using your browser.
    #[arg(long)]
    pub launch: bool,
    /// With --launch: show the browser window.
    #[arg(long, requires = "launch")]
    pub headed: bool,
    /// Serve streamable HTTP on 127.0.0.1 instead of stdio.
    #[arg(long)]
    pub http: bool,
    /// The HTTP port (with --http).
    #[arg(long, default_value_t = 8931, requires = "http")]
    pub port: u16,
}

/// `errand mcp install`.
#[derive(Debug, Clone, Subcommand)]
pub enum McpCommand {
    /// Add Errand to an MCP client's configuration (other entries are kept).
    Install {
        #[arg(long, value_enum)]
        client: Client,
        /// Print the entry instead of writing it.
        #[arg(long)]
        print: bool,
    },
}

/// The MCP clients `install` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Client {
    /// Claude Desktop (`claude_desktop_config.json`).
    Claude,
    /// Claude Code (`.mcp.json` in this folder).
    ClaudeCode,
    /// Cursor (`~/.cursor/mcp.json`).
    Cursor,
    /// VS Code (`.vscode/mcp.json` in this folder).
    Vscode,
}

impl Client {
    pub const ALL: [Client; 4] =
        [Client::Claude, Client::ClaudeCode, Client::Cursor, Client::Vscode];

    pub fn name(self) -> &'static str {
        match self {
            Client::Claude => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::Vscode => "VS Code",
        }
    }

    /// The config file the client reads.
    pub fn config_path(self) -> Option<PathBuf> {
        let home = directories::BaseDirs::new()?;
        let cwd = std::env::current_dir().ok()?;
        Some(match self {
            Client::Claude => home.config_dir().join("Claude").join("claude_desktop_config.json"),
            Client::ClaudeCode => cwd.join(".mcp.json"),
            Client::Cursor => home.home_dir().join(".cursor").join("mcp.json"),
            Client::Vscode => cwd.join(".vscode").join("mcp.json"),
        })
    }

    /// The key the servers are under.
    fn servers_key(self) -> &'static str {
        match self {
            Client::Vscode => "servers",
            _ => "mcpServers",
        }
    }

    fn entry(self, exe: &Path) -> Value {
        let mut e = json!({"command": exe.to_string_lossy(), "args": ["mcp"]});
        if matches!(self, Client::ClaudeCode | Client::Vscode) {
            e["type"] = json!("stdio");
        }
        e
    }
}

/// The config with Errand's entry merged in (other entries kept).
pub fn merged_config(client: Client, existing: Option<&str>, exe: &Path) -> Result<Value, String> {
    let mut config: Value = match existing.map(str::trim).filter(|s| !s.is_empty()) {
        Some(text) => serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?,
        None => json!({}),
    };
    if !config.is_object() {
        return Err("not a JSON object".into());
    }
    let key = client.servers_key();
    if !config[key].is_object() {
        config[key] = json!({});
    }
    config[key]["errand"] = client.entry(exe);
    Ok(config)
}

/// Whether the client's config names Errand.
pub fn configured(client: Client) -> Option<bool> {
    let path = client.config_path()?;
    let text = std::fs::read_to_string(path).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    Some(v[client.servers_key()]["errand"].is_object())
}

/// `errand doctor`'s lines about MCP: each client's config, and the HTTP
/// token file's permissions.
pub fn doctor_checks(data_dir: Option<&Path>) -> Vec<crate::setup::doctor::Check> {
    use crate::setup::doctor::{Check, Level};
    let line =
        |level, subject: &str, detail: String| Check { level, subject: subject.to_owned(), detail };
    let mut out = Vec::new();
    for client in Client::ALL {
        let subject = format!("mcp: {}", client.name());
        let path = client.config_path().map(|p| p.display().to_string()).unwrap_or_default();
        out.push(match configured(client) {
            Some(true) => line(Level::Ok, &subject, format!("configured in {path}")),
            _ => line(
                Level::Info,
                &subject,
                format!(
                    "not configured (errand mcp install --client {})",
                    match client {
                        Client::Claude => "claude",
                        Client::ClaudeCode => "claude-code",
                        Client::Cursor => "cursor",
                        Client::Vscode => "vscode",
                    }
                ),
            ),
        });
    }
    if let Some(dir) = data_dir {
        use std::os::unix::fs::PermissionsExt;
        let path = token_path(dir);
        out.push(match std::fs::metadata(&path) {
            Ok(m) if m.permissions().mode() & 0o077 == 0 => {
                line(Level::Ok, "mcp: http token", format!("{} (owner only)", path.display()))
            }
            Ok(m) => line(
                Level::Problem,
                "mcp: http token",
                format!(
                    "{} is readable by others (mode {:o}): chmod 600 it",
                    path.display(),
                    m.permissions().mode() & 0o777
                ),
            ),
            Err(_) => line(
                Level::Info,
                "mcp: http token",
                "none yet (made by the first errand mcp --http)".to_owned(),
            ),
        });
    }
    out
}

/// The HTTP token's file.
pub fn token_path(data_dir: &Path) -> PathBuf {
    data_dir.join("mcp-token")
}

/// The per-install HTTP token, made on first use (0600).
fn token(data_dir: &Path) -> std::io::Result<String> {
    let path = token_path(data_dir);
    if let Ok(t) = std::fs::read_to_string(&path) {
        if t.trim().len() >= 32 {
            return Ok(t.trim().to_owned());
        }
    }
    std::fs::create_dir_all(data_dir)?;
    let t = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    use std::io::Write;
    opts.open(&path)?.write_all(t.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(t)
}

/// Where tool calls go.
enum Backend {
    /// The native host of the user's browser, over its socket.
    Socket(Mutex<Option<std::os::unix::net::UnixStream>>),
    /// A browser of our own, the tools layer in this process.
    Launched {
        host: Host,
        /// Taken to close the browser at the end.
        connected: std::sync::Mutex<Option<Connected>>,
        session: OnceCell<Session<Host, Host>>,
    },
}

impl Backend {
    async fn call(&self, client: &str, name: &str, args: Value) -> Reply {
        match self {
            Backend::Launched { host, session, .. } => {
                let host = host.clone();
                let s =
                    session.get_or_try_init(|| async { host.begin_session(client).await }).await;
                match s {
                    Ok(s) => s.call(name, args).await,
                    Err(e) => Reply { text: e.to_string(), image: None, is_error: true },
                }
            }
            Backend::Socket(stream) => {
                let mut guard = stream.lock().await;
                let Some(s) = guard.take() else {
                    return gone();
                };
                let body =
                    Body::ToolCall { client: client.to_owned(), name: name.to_owned(), args };
                let done = tokio::task::spawn_blocking(move || {
                    let mut s = s;
                    let r = socket_call(&mut s, body);
                    (s, r)
                })
                .await;
                match done {
                    Ok((s, Ok(reply))) => {
                        *guard = Some(s);
                        reply
                    }
                    Ok((_, Err(why))) => Reply { text: why, image: None, is_error: true },
                    Err(_) => gone(),
                }
            }
        }
    }

    async fn finish(&self) {
        if let Backend::Launched { session, connected, .. } = self {
            if let Some(s) = session.get() {
                s.finish().await;
            }
            let taken = connected.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(c) = taken {
                c.close();
            }
        }
    }
}

fn gone() -> Reply {
    Reply {
        text: "Errand's host went away (the browser closed?); restart the MCP server".into(),
        image: None,
        is_error: true,
    }
}

/// One `tool_call` → `tool_result` over the socket.
fn socket_call(s: &mut std::os::unix::net::UnixStream, body: Body) -> Result<Reply, String> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let written = write_frame(s, &Envelope::new(id, body));
    loop {
        // A host that refused us (another client, another user) wrote why
        // and closed: read it even when our call could not be written.
        let env = match (transport::read_frame(s, 64 * 1024 * 1024), &written) {
            (Ok(Some(Ok(env))), _) => env,
            (_, Err(e)) => return Err(format!("Errand's host went away: {e}")),
            (Err(e), _) => return Err(format!("Errand's host went away: {e}")),
            (Ok(None), _) => return Err(gone().text),
            (Ok(Some(Err(e))), _) => return Err(format!("bad reply from Errand's host: {e}")),
        };
        if let Body::ToolResult { text, image, is_error } = env.body {
            // A refusal (another client, another user) answers nothing.
            if env.re == Some(id) || env.re.is_none() {
                return Ok(Reply { text, image, is_error });
            }
        }
    }
}

/// The MCP server: tools from the tools layer, calls to the backend.
#[derive(Clone)]
struct Server {
    backend: Arc<Backend>,
}

fn client_name(cx: &RequestContext<RoleServer>) -> String {
    cx.peer
        .peer_info()
        .map(|i| i.client_info.name.clone())
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "an MCP client".to_owned())
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("errand", crate::host::HOST_VERSION))
            .with_instructions(
                "Errand drives a real browser. Call `goto` to open a page, `observe` to read it as \
                 a numbered list, then act with the numbers (click, fill, …). Secrets are written \
                 as {{secret:NAME}}; Errand fills them only on their sites. Some actions wait for \
                 the user's approval in Errand's side panel.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = tool_list()
            .into_iter()
            .map(|t| {
                let schema = match t.input_schema {
                    Value::Object(m) => m,
                    _ => serde_json::Map::new(),
                };
                Tool::new(t.name, t.description, Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let client = client_name(&cx);
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let reply = self.backend.call(&client, &request.name, args).await;
        let mut content = vec![ContentBlock::text(reply.text)];
        if let Some(data_url) = reply.image {
            if let Some((head, b64)) = data_url.split_once(";base64,") {
                let mime = head.trim_start_matches("data:").to_owned();
                content.push(ContentBlock::image(b64.to_owned(), mime));
            }
        }
        let result = if reply.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        Ok(result.into())
    }
}

/// Runs `errand mcp` (or `errand mcp install`).
pub async fn main(args: McpArgs, command: Option<McpCommand>) -> Result<ExitCode, String> {
    if let Some(McpCommand::Install { client, print }) = command {
        return install(client, print);
    }
    let settings = Settings::load(&Overrides::default()).map_err(|e| e.to_string())?;
    let data_dir = settings.data_dir.clone();
    let backend = if args.launch {
        let connected = connect(settings, args.headed).await.map_err(|e| e.to_string())?;
        let host = connected.host.clone();
        answer_approvals_unasked(&host);
        Backend::Launched {
            host,
            connected: std::sync::Mutex::new(Some(connected)),
            session: OnceCell::new(),
        }
    } else {
        let path = socket_path();
        let stream = std::os::unix::net::UnixStream::connect(&path).map_err(|e| {
            format!(
                "Errand is not running in your browser ({}: {e}). Open Chrome with the Errand \
                 extension (the extension starts Errand's host), or use `errand mcp --launch` \
                 for a headless browser of Errand's own",
                path.display()
            )
        })?;
        Backend::Socket(Mutex::new(Some(stream)))
    };
    let server = Server { backend: Arc::new(backend) };
    let served = if args.http {
        serve_http(server.clone(), &data_dir, args.port).await
    } else {
        serve_stdio(server.clone()).await
    };
    server.backend.finish().await;
    served.map(|()| ExitCode::SUCCESS)
}

/// With `--launch` there is no side panel, and no terminal either (stdin
/// is the MCP channel over stdio): an action that needs approval is
/// answered "nobody could be asked" at once — not done, and the caller's
/// tool error says so — instead of waiting for a decision that never comes.
fn answer_approvals_unasked(host: &Host) {
    use tokio::sync::broadcast::error::RecvError;
    let mut events = host.subscribe();
    let host = host.clone();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(ev) => {
                    if let errand_protocol::TaskEvent::Approval { .. } = ev.event {
                        let decision = crate::agent::Decision::Unasked;
                        if let Err(e) = host.decide(Some(&ev.task_id), decision) {
                            tracing::warn!("{e}");
                        }
                    }
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            }
        }
    });
}

async fn serve_stdio(server: Server) -> Result<(), String> {
    let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| e.to_string())?;
    tokio::select! {
        r = running.waiting() => r.map(drop).map_err(|e| e.to_string()),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}

async fn serve_http(server: Server, data_dir: &Path, port: u16) -> Result<(), String> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let token = token(data_dir).map_err(|e| format!("cannot make the HTTP token: {e}"))?;
    let config = StreamableHttpServerConfig::default();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let expected = Arc::new(format!("Bearer {token}"));
    let app = axum::Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            let expected = expected.clone();
            async move { guard(req, next, &expected).await }
        },
    ));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!(
        "errand mcp: http://{addr}/mcp (Authorization: Bearer <the token in {}>)",
        token_path(data_dir).display()
    );
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| e.to_string())
}

/// Refuses browser pages (any `Origin`) with 403 and requests without the
/// token with 401.
async fn guard(
    req: axum::extract::Request,
    next: axum::middleware::Next,
    expected: &str,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    if req.headers().contains_key(axum::http::header::ORIGIN) {
        return (StatusCode::FORBIDDEN, "errand mcp does not serve web pages").into_response();
    }
    let auth = req.headers().get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    if !auth.is_some_and(|a| constant_eq(a.as_bytes(), expected.as_bytes())) {
        return (StatusCode::UNAUTHORIZED, "errand mcp needs its token").into_response();
    }
    next.run(req).await
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn install(client: Client, print: bool) -> Result<ExitCode, String> {
    let exe = crate::setup::install::own_path().map_err(|e| e.to_string())?;
    let path = client.config_path().ok_or("cannot find the home folder")?;
    let existing = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let config = merged_config(client, existing.as_deref(), &exe)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let text = serde_json::to_string_pretty(&config).map_err(|e| e.to_string())?;
    if print {
        term::line(format!("{}:\n{text}", path.display()));
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    std::fs::write(&path, text + "\n")
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    term::line(format!("{}: Errand added to {}", client.name(), path.display()));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_keeps_the_other_entries() {
        let exe = Path::new("/opt/errand");
        let existing = r#"{"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}"#;
        let v = merged_config(Client::Claude, Some(existing), exe).unwrap();
        assert_eq!(v["mcpServers"]["other"]["command"], "x");
        assert_eq!(v["theme"], "dark");
        assert_eq!(v["mcpServers"]["errand"]["args"], json!(["mcp"]));
        let v = merged_config(Client::Vscode, None, exe).unwrap();
        assert_eq!(v["servers"]["errand"]["type"], "stdio");
        assert!(merged_config(Client::Cursor, Some("[1]"), exe).is_err());
    }

    #[test]
    fn doctor_checks_the_token_file_is_owner_only() {
        use crate::setup::doctor::Level;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let line = |dir: &Path| {
            doctor_checks(Some(dir)).into_iter().find(|c| c.subject == "mcp: http token").unwrap()
        };
        assert_eq!(line(dir.path()).level, Level::Info, "no token yet");
        let t = token(dir.path()).unwrap();
        assert!(t.len() >= 64);
        assert_eq!(token(dir.path()).unwrap(), t, "one token per install");
        assert_eq!(line(dir.path()).level, Level::Ok);
        let path = token_path(dir.path());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(line(dir.path()).level, Level::Problem);
        assert_eq!(doctor_checks(None).len(), Client::ALL.len());
    }
}
