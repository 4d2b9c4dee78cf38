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
//! Before it sends anything to the host's socket, this process checks that
//! the socket's folder and the socket are the user's alone and that the
//! process listening runs as the user (`crate::host::mcp::connect_checked`):
//! without `XDG_RUNTIME_DIR` the socket is in the shared temporary folder,
//! where another local user could have made `errand-<uid>/` first.
//!
//! Over HTTP every request needs `Authorization: Bearer <token>` (a random
//! per-install token in `mcp-token` in the data folder, 0600; a token file
//! other users may read or write, another user's, or a link is not used: a
//! new one replaces it, written to a 0600 file beside it and renamed over
//! it, and stderr and the log say so), and any request carrying an `Origin`
//! header (a browser page) is refused with 403; no CORS headers are sent.
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
use crate::host::mcp::{connect_checked, my_uid, socket_path, write_frame};
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

/// `errand doctor`'s lines about MCP: each client's config, the host's
/// socket (its folder and the socket yours alone), and the HTTP token
/// file's permissions.
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
    out.push(socket_check(&socket_path()));
    if let Some(dir) = data_dir {
        let path = token_path(dir);
        out.push(match token_file(&path) {
            Ok(TokenFile::Private) => {
                line(Level::Ok, "mcp: http token", format!("{} (owner only)", path.display()))
            }
            Ok(TokenFile::Unsafe(why)) => line(
                Level::Problem,
                "mcp: http token",
                format!(
                    "{} {why}: errand mcp --http will replace it with a new token (or remove it)",
                    path.display()
                ),
            ),
            Ok(TokenFile::Missing) => line(
                Level::Info,
                "mcp: http token",
                "none yet (made by the first errand mcp --http)".to_owned(),
            ),
            Err(e) => line(Level::Problem, "mcp: http token", format!("{}: {e}", path.display())),
        });
    }
    out
}

/// The doctor's line about the host's socket at `path`.
fn socket_check(path: &Path) -> crate::setup::doctor::Check {
    use crate::host::mcp::{check_private_dir, check_socket};
    use crate::setup::doctor::{Check, Level};
    let line = |level, detail: String| Check { level, subject: "mcp: socket".to_owned(), detail };
    let missing = |p: &Path| std::fs::symlink_metadata(p).is_err();
    let dir = path.parent().unwrap_or(Path::new("."));
    if missing(dir) {
        return line(Level::Info, format!("{}: none yet (Errand's host makes it)", path.display()));
    }
    if let Err(e) = check_private_dir(dir, my_uid()) {
        return line(Level::Problem, e.to_string());
    }
    if missing(path) {
        return line(Level::Info, format!("{}: no host listening", path.display()));
    }
    match check_socket(path, my_uid()) {
        Ok(()) => line(Level::Ok, format!("{} (yours alone)", path.display())),
        Err(e) => line(Level::Problem, e.to_string()),
    }
}

/// The HTTP token's file.
pub fn token_path(data_dir: &Path) -> PathBuf {
    data_dir.join("mcp-token")
}

/// What the token file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenFile {
    Missing,
    /// A plain file of ours nobody else may read or write.
    Private,
    /// Not to be used, and why: a token others may read (or write) is no
    /// secret, and a link or another user's file was not made by us.
    Unsafe(String),
}

/// Checks the token file at `path` (without following a link).
pub fn token_file(path: &Path) -> std::io::Result<TokenFile> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TokenFile::Missing),
        Err(e) => return Err(e),
    };
    let mode = m.permissions().mode() & 0o777;
    Ok(TokenFile::Unsafe(if m.file_type().is_symlink() {
        "is a symbolic link".to_owned()
    } else if !m.is_file() {
        "is not a plain file".to_owned()
    } else if m.uid() != my_uid() {
        format!("belongs to uid {}, not to you (uid {})", m.uid(), my_uid())
    } else if mode & 0o077 != 0 {
        format!("is open to other users (mode {mode:03o})")
    } else {
        return Ok(TokenFile::Private);
    }))
}

/// The per-install HTTP token, made on first use (0600). A token file
/// others could read or write, another user's or a link is not used: a
/// new token replaces it (a 0600 file written beside it, then renamed over
/// it), and stderr and the log say so.
fn token(data_dir: &Path) -> std::io::Result<String> {
    let (token, note) = token_noting(data_dir)?;
    if let Some(msg) = note {
        term::note(format!("errand mcp: {msg}"));
        tracing::warn!("{msg}");
    }
    Ok(token)
}

/// [`token`], and what to tell the user when an unsafe file was replaced.
fn token_noting(data_dir: &Path) -> std::io::Result<(String, Option<String>)> {
    use std::io::{Read, Write};
    use std::os::unix::fs::MetadataExt;
    let path = token_path(data_dir);
    let mut note = None;
    match token_file(&path)? {
        TokenFile::Missing => {}
        TokenFile::Private => {
            // Read what was checked: the same file, not one put there since.
            let checked = std::fs::symlink_metadata(&path);
            if let (Ok(mut f), Ok(checked)) = (std::fs::File::open(&path), checked) {
                let same = f
                    .metadata()
                    .is_ok_and(|m| m.ino() == checked.ino() && m.dev() == checked.dev());
                let mut t = String::new();
                if same && f.read_to_string(&mut t).is_ok() && t.trim().len() >= 32 {
                    return Ok((t.trim().to_owned(), None));
                }
            }
        }
        TokenFile::Unsafe(why) => {
            note = Some(format!(
                "{} {why}: not used; a new token was made (0600), give your MCP clients the new one",
                path.display()
            ));
        }
    }
    std::fs::create_dir_all(data_dir)?;
    let t = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    // A temporary file is made 0600; the rename replaces a link rather
    // than writing through it.
    let mut file = tempfile::Builder::new().prefix(".mcp-token.").tempfile_in(data_dir)?;
    file.write_all(t.as_bytes())?;
    file.as_file().sync_all()?;
    file.persist(&path).map_err(|e| e.error)?;
    Ok((t, note))
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
        // Another local user may have made the folder or the socket to
        // receive our calls: refused before anything is sent.
        let stream = connect_checked(&path)
            .await
            .map_err(|e| format!("errand mcp will not use the host's socket: {e}"))?
            .ok_or_else(|| {
                format!(
                    "Errand is not running in your browser (nothing listens on {}). Open Chrome \
                     with the Errand extension (the extension starts Errand's host), or use \
                     `errand mcp --launch` for a headless browser of Errand's own",
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
        assert_eq!(doctor_checks(None).len(), Client::ALL.len() + 1);
    }

    #[test]
    fn doctor_says_whose_the_socket_folder_is() {
        use crate::setup::doctor::Level;
        use std::os::unix::fs::PermissionsExt;
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("errand-0");
        let sock = dir.join("mcp.sock");
        assert_eq!(socket_check(&sock).level, Level::Info);
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let c = socket_check(&sock);
        assert!(c.level == Level::Problem && c.detail.contains("mode 755"), "{c:?}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(socket_check(&sock).level, Level::Info);
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        assert_eq!(socket_check(&sock).level, Level::Ok);
        if my_uid() == 0 {
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            let c = socket_check(&sock);
            assert!(c.level == Level::Problem && c.detail.contains("uid 65534"), "{c:?}");
        }
    }

    #[test]
    fn a_token_others_can_read_is_replaced_by_a_new_private_one() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let path = token_path(dir.path());
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
        let old = "0123456789abcdef0123456789abcdef0123456789abcdef";
        // 0644: anyone on the machine may have read it.
        std::fs::write(&path, old).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (t, note) = token_noting(dir.path()).unwrap();
        assert_ne!(t, old);
        let note = note.expect("the user is told");
        assert!(note.contains("mode 644") && note.contains("new token"), "{note}");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), t);
        // Then it is used as it is, silently.
        assert_eq!(token_noting(dir.path()).unwrap(), (t.clone(), None));
        // Writable by the group: replaced too.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o620)).unwrap();
        let (t2, note) = token_noting(dir.path()).unwrap();
        assert!(t2 != t && note.is_some_and(|n| n.contains("mode 620")));
        // A link (to a token another user reads) is replaced, not followed;
        // its target is left as it was.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, old).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let (t3, note) = token_noting(dir.path()).unwrap();
        assert!(t3 != old && note.is_some_and(|n| n.contains("symbolic link")));
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), old);
        // Another user's file (root can make one here).
        if my_uid() == 0 {
            std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
            let (t4, note) = token_noting(dir.path()).unwrap();
            assert!(t4 != t3 && note.is_some_and(|n| n.contains("uid 65534")));
            assert_eq!(std::fs::metadata(&path).unwrap().uid(), 0);
        }
        // No stray temporary files.
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}
