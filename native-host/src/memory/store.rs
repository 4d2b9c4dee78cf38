//! The SQLite store: every task and every step, in `<data dir>/errand.db`.
//!
//! Several host processes can run at once (the browser starts one per
//! connection), so the database is opened in WAL mode with a busy timeout.
//! On open, tasks left `running` by a host process that no longer exists are
//! marked `interrupted`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use errand_protocol::Outcome;
use rusqlite::{Connection, OptionalExtension, params};

/// The database file's name inside the data dir.
pub const DB_FILE: &str = "errand.db";

/// The schema version this build writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 5;

/// Each migration takes the database from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 0 → 1
    r#"
    CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        task TEXT NOT NULL,
        url TEXT,
        tab_id INTEGER,
        status TEXT NOT NULL, -- running|done|stopped|failed|step_limit|interrupted
        answer TEXT,
        error TEXT,
        steps INTEGER NOT NULL DEFAULT 0,
        tokens_in INTEGER NOT NULL DEFAULT 0,
        tokens_out INTEGER NOT NULL DEFAULT 0,
        host_pid INTEGER,
        started_at TEXT NOT NULL,
        ended_at TEXT
    );
    CREATE TABLE steps (
        task_id TEXT NOT NULL REFERENCES tasks(id),
        step INTEGER NOT NULL,
        evaluation TEXT,
        memory TEXT,
        next_goal TEXT,
        actions_json TEXT NOT NULL,
        build TEXT, -- wasm|js
        url TEXT,
        elements INTEGER,
        model_ms INTEGER,
        tokens_in INTEGER,
        tokens_out INTEGER,
        created_at TEXT NOT NULL,
        PRIMARY KEY (task_id, step)
    );
    CREATE INDEX tasks_started_at ON tasks(started_at);
    "#,
    // 1 → 2: money, and every model call
    r#"
    ALTER TABLE tasks ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
    ALTER TABLE steps ADD COLUMN cost_usd REAL;
    CREATE TABLE model_calls (
        task_id TEXT NOT NULL REFERENCES tasks(id),
        step INTEGER NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        ms INTEGER NOT NULL,
        tokens_in INTEGER,
        tokens_out INTEGER,
        cost_usd REAL,
        error TEXT,
        created_at TEXT NOT NULL
    );
    CREATE INDEX model_calls_task ON model_calls(task_id, step);
    "#,
    // 2 → 3: the user's profile facts (never secrets: those live in the
    // keychain or an owner-only file, see secrets.rs)
    r#"
    CREATE TABLE profile_facts (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    "#,
    // 3 → 4: past tasks and answers, searchable
    r#"
    CREATE VIRTUAL TABLE task_search USING fts5(task_id UNINDEXED, site, task, answer);
    "#,
    // 4 → 5: approvals the user gave always on a site, per kind of action
    r#"
    CREATE TABLE grants (
        site TEXT NOT NULL,
        kind TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (site, kind)
    );
    "#,
];

/// What can go wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the data folder {path}: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot open the database {path}: {source}")]
    Open { path: PathBuf, source: rusqlite::Error },
    #[error(
        "the database {path} has schema version {found}, newer than this build's {SCHEMA_VERSION}: update errand"
    )]
    TooNew { path: PathBuf, found: i64 },
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("cannot encode the step's actions: {0}")]
    Json(#[from] serde_json::Error),
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    pub id: String,
    pub task: String,
    pub url: Option<String>,
    pub tab_id: Option<i64>,
    pub status: String,
    pub answer: Option<String>,
    pub error: Option<String>,
    pub steps: u32,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// What the task's model calls cost, in US dollars (0 when unpriced).
    pub cost_usd: f64,
    pub host_pid: Option<u32>,
    pub started_at: String,
    pub ended_at: Option<String>,
}

/// One step as stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepRow {
    pub task_id: String,
    pub step: u32,
    pub evaluation: String,
    pub memory: String,
    pub next_goal: String,
    /// The step's `ActionRecord`s as JSON.
    pub actions_json: String,
    /// `wasm` or `js`.
    pub build: Option<String>,
    pub url: Option<String>,
    pub elements: Option<u32>,
    pub model_ms: Option<u64>,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    /// US dollars, when the model has a price.
    pub cost_usd: Option<f64>,
}

/// One model call as stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelCallRow {
    pub task_id: String,
    pub step: u32,
    pub provider: String,
    pub model: String,
    pub ms: u64,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    pub cost_usd: Option<f64>,
    pub error: Option<String>,
}

/// A handle on the database; cheap to clone, safe to share between tasks.
#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens (creating if needed) `<data_dir>/errand.db`.
    pub fn open_in(data_dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(data_dir)
            .map_err(|source| StoreError::CreateDir { path: data_dir.to_owned(), source })?;
        Store::open(&data_dir.join(DB_FILE))
    }

    /// Opens (creating if needed) the database at `path`, migrates it and
    /// marks tasks of vanished host processes as interrupted.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let open_err = |source| StoreError::Open { path: path.to_owned(), source };
        let mut conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(open_err)?;
        // `journal_mode` returns a row; query it rather than execute.
        let _mode: String =
            conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(open_err)?;
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
            .map_err(open_err)?;
        migrate(&mut conn, path)?;
        let store = Store { conn: Arc::new(Mutex::new(conn)), path: path.to_owned() };
        let n = store.mark_interrupted()?;
        if n > 0 {
            tracing::info!(count = n, "marked tasks of ended host processes as interrupted");
        }
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves the connection usable.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a new running task owned by this process.
    pub fn create_task(
        &self,
        id: &str,
        task: &str,
        url: Option<&str>,
        tab_id: Option<i64>,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT INTO tasks (id, task, url, tab_id, status, host_pid, started_at)
             VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6)",
            params![id, task, url, tab_id, std::process::id(), now_rfc3339()],
        )?;
        Ok(())
    }

    /// Notes the tab (and its URL) the task runs in.
    pub fn set_tab(&self, id: &str, tab_id: i64, url: &str) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE tasks SET tab_id = ?2, url = ?3 WHERE id = ?1",
            params![id, tab_id, url],
        )?;
        Ok(())
    }

    /// Records one step and adds its tokens to the task's totals.
    pub fn record_step(&self, row: &StepRow) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.execute(
            "INSERT OR REPLACE INTO steps (task_id, step, evaluation, memory, next_goal,
                 actions_json, build, url, elements, model_ms, tokens_in, tokens_out, created_at,
                 cost_usd)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                row.task_id,
                row.step,
                row.evaluation,
                row.memory,
                row.next_goal,
                row.actions_json,
                row.build,
                row.url,
                row.elements,
                row.model_ms.map(clamp_i64),
                row.tokens_in.map(clamp_i64),
                row.tokens_out.map(clamp_i64),
                now_rfc3339(),
                row.cost_usd
            ],
        )?;
        tx.execute(
            "UPDATE tasks SET steps = MAX(steps, ?2),
                 tokens_in = tokens_in + ?3, tokens_out = tokens_out + ?4,
                 cost_usd = cost_usd + ?5
             WHERE id = ?1",
            params![
                row.task_id,
                row.step,
                clamp_i64(row.tokens_in.unwrap_or(0)),
                clamp_i64(row.tokens_out.unwrap_or(0)),
                row.cost_usd.unwrap_or(0.0)
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Records one model call (each attempt of a step's question).
    pub fn record_model_call(&self, row: &ModelCallRow) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT INTO model_calls (task_id, step, provider, model, ms, tokens_in, tokens_out,
                 cost_usd, error, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                row.task_id,
                row.step,
                row.provider,
                row.model,
                clamp_i64(row.ms),
                row.tokens_in.map(clamp_i64),
                row.tokens_out.map(clamp_i64),
                row.cost_usd,
                row.error,
                now_rfc3339()
            ],
        )?;
        Ok(())
    }

    /// A task's model calls, in order.
    pub fn model_calls(&self, task_id: &str) -> Result<Vec<ModelCallRow>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT task_id, step, provider, model, ms, tokens_in, tokens_out, cost_usd, error
             FROM model_calls WHERE task_id = ?1 ORDER BY rowid",
        )?;
        let rows = stmt
            .query_map([task_id], |r| {
                Ok(ModelCallRow {
                    task_id: r.get(0)?,
                    step: r.get(1)?,
                    provider: r.get(2)?,
                    model: r.get(3)?,
                    ms: unclamp(r.get(4)?),
                    tokens_in: r.get::<_, Option<i64>>(5)?.map(unclamp),
                    tokens_out: r.get::<_, Option<i64>>(6)?.map(unclamp),
                    cost_usd: r.get(7)?,
                    error: r.get(8)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Past successful tasks matching `query` (any of its words), best
    /// first, on `site` when given: `(task_id, task, answer)`.
    pub fn recall(
        &self,
        query: &str,
        site: Option<&str>,
        limit: u32,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() > 2)
            .map(|w| format!("\"{}\"", w.to_lowercase()))
            .collect();
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let mut expr = format!("{{task answer}} : ({})", words.join(" OR "));
        if let Some(site) = site.filter(|s| !s.is_empty()) {
            expr = format!("site : \"{}\" AND {expr}", site.replace('"', ""));
        }
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT task_id, task, answer FROM task_search WHERE task_search MATCH ?1
             ORDER BY rank LIMIT ?2",
        )?;
        let rows = stmt
            .query_map(params![expr, limit], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Sets a profile fact.
    pub fn set_fact(&self, name: &str, value: &str) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT OR REPLACE INTO profile_facts (name, value, updated_at) VALUES (?1, ?2, ?3)",
            params![name, value, now_rfc3339()],
        )?;
        Ok(())
    }

    /// Forgets a profile fact; whether it existed.
    pub fn forget_fact(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.conn().execute("DELETE FROM profile_facts WHERE name = ?1", [name])? > 0)
    }

    /// Keeps an approval given always on `site` for actions of `kind`.
    pub fn add_grant(&self, site: &str, kind: &str) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT OR IGNORE INTO grants (site, kind, created_at) VALUES (?1, ?2, ?3)",
            params![site, kind, now_rfc3339()],
        )?;
        Ok(())
    }

    /// Whether the user approved actions of `kind` always on `site`.
    pub fn has_grant(&self, site: &str, kind: &str) -> Result<bool, StoreError> {
        let n: i64 = self.conn().query_row(
            "SELECT COUNT(*) FROM grants WHERE site = ?1 AND kind = ?2",
            params![site, kind],
            |r| r.get(0),
        )?;
        Ok(n > 0)
    }

    /// Every lasting approval: (site, kind, when), by site.
    pub fn grants(&self) -> Result<Vec<(String, String, String)>, StoreError> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare("SELECT site, kind, created_at FROM grants ORDER BY site, kind")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Revokes lasting approvals on `site` (of `kind`, or every kind);
    /// how many there were.
    pub fn revoke_grant(&self, site: &str, kind: Option<&str>) -> Result<usize, StoreError> {
        let n = match kind {
            Some(k) => self
                .conn()
                .execute("DELETE FROM grants WHERE site = ?1 AND kind = ?2", params![site, k])?,
            None => self.conn().execute("DELETE FROM grants WHERE site = ?1", [site])?,
        };
        Ok(n)
    }

    /// Every profile fact, by name.
    pub fn facts(&self) -> Result<Vec<(String, String)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT name, value FROM profile_facts ORDER BY name")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Records how a task ended.
    pub fn finish_task(&self, id: &str, outcome: &Outcome) -> Result<(), StoreError> {
        let (answer, error) = match outcome {
            Outcome::Done { answer, .. } => (Some(answer.clone()), None),
            Outcome::Failed { error } => (None, Some(error.clone())),
            Outcome::StepLimit { steps } => {
                (None, Some(format!("stopped after the step limit ({steps} steps)")))
            }
            Outcome::Stopped {} => (None, Some("stopped by the user".to_owned())),
            Outcome::Interrupted {} => (None, Some("the host ended while the task ran".to_owned())),
        };
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE tasks SET status = ?2, answer = ?3, error = ?4, ended_at = ?5 WHERE id = ?1",
            params![id, outcome.status(), answer, error, now_rfc3339()],
        )?;
        if let Outcome::Done { answer, success: true } = outcome {
            let row: Option<(String, Option<String>)> = tx
                .query_row("SELECT task, url FROM tasks WHERE id = ?1", [id], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?;
            if let Some((task, url)) = row {
                let site = url.as_deref().map(site_of).unwrap_or_default();
                tx.execute(
                    "INSERT INTO task_search (task_id, site, task, answer) VALUES (?1, ?2, ?3, ?4)",
                    params![id, site, task, answer],
                )?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// One task, if it exists.
    pub fn task(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        let conn = self.conn();
        let row = conn
            .query_row(
                "SELECT id, task, url, tab_id, status, answer, error, steps, tokens_in,
                        tokens_out, host_pid, started_at, ended_at, cost_usd
                 FROM tasks WHERE id = ?1",
                [id],
                task_row,
            )
            .optional()?;
        Ok(row)
    }

    /// The most recent tasks, newest first.
    pub fn recent_tasks(&self, limit: u32) -> Result<Vec<TaskRow>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT id, task, url, tab_id, status, answer, error, steps, tokens_in,
                    tokens_out, host_pid, started_at, ended_at, cost_usd
             FROM tasks ORDER BY started_at DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit], task_row)?.collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Past tasks, newest first, at most `limit`. With a `query`, only
    /// those whose task text or answer holds every word of it (a substring,
    /// ignoring ASCII case; `%`, `_`, quotes and FTS operators are plain
    /// characters). Unlike [`Store::recall`] (the FTS5 index of *successful*
    /// tasks, for the model) this searches every task.
    pub fn search_tasks(
        &self,
        query: Option<&str>,
        limit: u32,
    ) -> Result<Vec<TaskRow>, StoreError> {
        let words: Vec<String> = query
            .unwrap_or("")
            .split_whitespace()
            .take(MAX_SEARCH_WORDS)
            .map(|w| format!("%{}%", like_escape(w)))
            .collect();
        let filter: Vec<String> = (1..=words.len())
            .map(|i| {
                format!("(task LIKE ?{i} ESCAPE '\\' OR IFNULL(answer, '') LIKE ?{i} ESCAPE '\\')")
            })
            .collect();
        let where_clause = if filter.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", filter.join(" AND "))
        };
        let sql = format!(
            "SELECT id, task, url, tab_id, status, answer, error, steps, tokens_in,
                    tokens_out, host_pid, started_at, ended_at, cost_usd
             FROM tasks {where_clause} ORDER BY started_at DESC, rowid DESC LIMIT {limit}"
        );
        let conn = self.conn();
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(words.iter()), task_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// A task's steps, in order.
    pub fn steps(&self, task_id: &str) -> Result<Vec<StepRow>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT task_id, step, evaluation, memory, next_goal, actions_json, build, url,
                    elements, model_ms, tokens_in, tokens_out, cost_usd
             FROM steps WHERE task_id = ?1 ORDER BY step",
        )?;
        let rows = stmt
            .query_map([task_id], |r| {
                Ok(StepRow {
                    task_id: r.get(0)?,
                    step: r.get(1)?,
                    evaluation: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                    memory: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                    next_goal: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                    actions_json: r.get(5)?,
                    build: r.get(6)?,
                    url: r.get(7)?,
                    elements: r.get(8)?,
                    model_ms: r.get::<_, Option<i64>>(9)?.map(unclamp),
                    tokens_in: r.get::<_, Option<i64>>(10)?.map(unclamp),
                    tokens_out: r.get::<_, Option<i64>>(11)?.map(unclamp),
                    cost_usd: r.get(12)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Marks `running` tasks whose host process is gone as `interrupted`.
    /// Returns how many were marked.
    pub fn mark_interrupted(&self) -> Result<usize, StoreError> {
        let me = std::process::id();
        let conn = self.conn();
        let running: Vec<(String, Option<u32>)> = {
            let mut stmt =
                conn.prepare("SELECT id, host_pid FROM tasks WHERE status = 'running'")?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?
        };
        let mut marked = 0;
        for (id, pid) in running {
            let gone = match pid {
                Some(pid) => pid != me && !process_alive(pid),
                None => true,
            };
            if gone {
                let error = match pid {
                    Some(pid) => format!("the host process {pid} ended while the task ran"),
                    None => "the host process ended while the task ran".to_owned(),
                };
                marked += conn.execute(
                    "UPDATE tasks SET status = 'interrupted', error = ?2, ended_at = ?3
                     WHERE id = ?1 AND status = 'running'",
                    params![id, error, now_rfc3339()],
                )?;
            }
        }
        Ok(marked)
    }
}

fn task_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TaskRow> {
    Ok(TaskRow {
        id: r.get(0)?,
        task: r.get(1)?,
        url: r.get(2)?,
        tab_id: r.get(3)?,
        status: r.get(4)?,
        answer: r.get(5)?,
        error: r.get(6)?,
        steps: r.get(7)?,
        tokens_in: unclamp(r.get(8)?),
        tokens_out: unclamp(r.get(9)?),
        host_pid: r.get(10)?,
        started_at: r.get(11)?,
        ended_at: r.get(12)?,
        cost_usd: r.get(13)?,
    })
}

/// The most words of a history search that are used.
const MAX_SEARCH_WORDS: usize = 16;

/// `text` with `LIKE`'s wildcards (and the escape character) escaped by `\`.
fn like_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn clamp_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn unclamp(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::TooNew { path: path.to_owned(), found: version });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(usize::try_from(version).unwrap_or(0)) {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)?;
    }
    tx.commit()?;
    Ok(())
}

/// The host of a URL, for recall by site (`shop.example`).
pub fn site_of(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or(host);
    host.split(':').next().unwrap_or(host).to_ascii_lowercase()
}

/// Whether a process with this id exists.
pub fn process_alive(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        Path::new(&format!("/proc/{pid}")).exists()
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        std::process::Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(true)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// The current time as RFC 3339 UTC with milliseconds: `2025-06-01T12:34:56.789Z`.
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

/// Formats a time as RFC 3339 UTC with milliseconds.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, day) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian
/// (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(task_id: &str, n: u32) -> StepRow {
        StepRow {
            task_id: task_id.into(),
            step: n,
            evaluation: "ok".into(),
            memory: "m".into(),
            next_goal: "g".into(),
            actions_json: "[]".into(),
            build: Some("wasm".into()),
            url: Some("https://example.test/".into()),
            elements: Some(3),
            model_ms: Some(120),
            tokens_in: Some(100),
            tokens_out: Some(20),
            cost_usd: Some(0.25),
        }
    }

    #[test]
    fn recalls_past_answers_by_words_and_site() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in(dir.path()).unwrap();
        for (id, task, url, answer) in [
            ("a", "Order a blue mug", "https://shop.example/mugs", "Ordered, #123"),
            ("b", "Order a red plate", "https://other.example/", "Ordered plate"),
        ] {
            store.create_task(id, task, Some(url), None).unwrap();
            store.set_tab(id, 1, url).unwrap();
            store.finish_task(id, &Outcome::Done { answer: answer.into(), success: true }).unwrap();
        }
        store.create_task("c", "Order a mug", None, None).unwrap();
        store.finish_task("c", &Outcome::Failed { error: "x".into() }).unwrap();
        let hits = store.recall("order another MUG please", Some("shop.example"), 5).unwrap();
        assert_eq!(hits, vec![("a".into(), "Order a blue mug".into(), "Ordered, #123".into())]);
        assert_eq!(store.recall("plate", None, 5).unwrap().len(), 1);
        assert!(store.recall("\"; DROP", None, 5).unwrap().is_empty());
        assert_eq!(site_of("https://u@Shop.example:8443/x"), "shop.example");
    }

    #[test]
    fn searches_every_task_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in(dir.path()).unwrap();
        for (id, task) in [
            ("a", "Order a blue mug"),
            ("b", "Find 100% cotton shirts"),
            ("c", "Order a red plate"),
            ("d", "snake_case AND \"quotes\" (NEAR"),
        ] {
            store.create_task(id, task, None, None).unwrap();
            std::thread::sleep(Duration::from_millis(3));
        }
        store
            .finish_task(
                "c",
                &Outcome::Done { answer: "Plate ordered: MUG-less".into(), success: false },
            )
            .unwrap();
        store.finish_task("a", &Outcome::Failed { error: "no mugs".into() }).unwrap();
        let ids = |q: Option<&str>, limit| {
            store.search_tasks(q, limit).unwrap().into_iter().map(|t| t.id).collect::<Vec<_>>()
        };
        assert_eq!(ids(None, 10), ["d", "c", "b", "a"]);
        assert_eq!(ids(None, 2), ["d", "c"]);
        // Task text or answer, every word, any case.
        assert_eq!(ids(Some("mug"), 10), ["c", "a"]);
        assert_eq!(ids(Some("ORDER mug"), 10), ["c", "a"]);
        assert_eq!(ids(Some("order blue"), 10), ["a"]);
        // Wildcards and FTS syntax are plain text.
        assert_eq!(ids(Some("100%"), 10), ["b"]);
        assert_eq!(ids(Some("%"), 10), ["b"]);
        assert_eq!(ids(Some("e_c"), 10), ["d"]);
        assert_eq!(ids(Some("\"quotes\" (NEAR"), 10), ["d"]);
        assert!(ids(Some("\\"), 10).is_empty());
        assert_eq!(ids(Some("   "), 10).len(), 4);
    }

    #[test]
    fn formats_rfc3339() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_709_210_096_789); // a leap day
        assert_eq!(rfc3339(t), "2024-02-29T12:34:56.789Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn records_a_task_and_its_steps() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in(dir.path()).unwrap();
        store.create_task("t1", "buy milk", Some("https://shop.test/"), None).unwrap();
        store.set_tab("t1", 5, "https://shop.test/home").unwrap();
        store.record_step(&step("t1", 1)).unwrap();
        store.record_step(&step("t1", 2)).unwrap();
        store.finish_task("t1", &Outcome::Done { answer: "bought".into(), success: true }).unwrap();

        let t = store.task("t1").unwrap().unwrap();
        assert_eq!(t.status, "done");
        assert_eq!(t.answer.as_deref(), Some("bought"));
        assert_eq!(t.tab_id, Some(5));
        assert_eq!(t.url.as_deref(), Some("https://shop.test/home"));
        assert_eq!((t.steps, t.tokens_in, t.tokens_out), (2, 200, 40));
        assert!((t.cost_usd - 0.5).abs() < 1e-9, "{}", t.cost_usd);
        store
            .record_model_call(&ModelCallRow {
                task_id: t.id.clone(),
                step: 1,
                provider: "openai".into(),
                model: "m".into(),
                ms: 5,
                tokens_in: Some(3),
                error: Some("HTTP 429".into()),
                ..Default::default()
            })
            .unwrap();
        let calls = store.model_calls(&t.id).unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].error.as_deref(), Some("HTTP 429"));
        assert_eq!(t.host_pid, Some(std::process::id()));
        assert!(t.started_at.ends_with('Z') && t.ended_at.is_some());
        let steps = store.steps("t1").unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[1], step("t1", 2));
        assert_eq!(store.recent_tasks(10).unwrap().len(), 1);
        assert!(store.task("nope").unwrap().is_none());

        let version: i64 = store.conn().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let mode: String = store.conn().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn marks_tasks_of_dead_hosts_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in(dir.path()).unwrap();
        store.create_task("mine", "a", None, Some(1)).unwrap();
        store.create_task("dead", "b", None, Some(2)).unwrap();
        store.create_task("alive", "c", None, Some(3)).unwrap();
        // A process id that does not exist, and one that does (pid 1).
        let dead_pid = 99_999_999_u32; // above any pid_max
        assert!(!process_alive(dead_pid));
        store
            .conn()
            .execute("UPDATE tasks SET host_pid = ?1 WHERE id = 'dead'", [dead_pid])
            .unwrap();
        store.conn().execute("UPDATE tasks SET host_pid = 1 WHERE id = 'alive'", []).unwrap();
        drop(store);

        let store = Store::open_in(dir.path()).unwrap();
        let status = |id| store.task(id).unwrap().unwrap().status;
        assert_eq!(status("dead"), "interrupted");
        assert_eq!(status("mine"), "running", "this process still runs it");
        assert_eq!(status("alive"), "running");
        let dead = store.task("dead").unwrap().unwrap();
        assert!(dead.error.unwrap().contains("99999999"));
        assert!(dead.ended_at.is_some());
    }

    #[test]
    fn two_connections_write_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let a = Store::open_in(dir.path()).unwrap();
        let b = Store::open_in(dir.path()).unwrap();
        let writers: Vec<_> = [("a", a.clone()), ("b", b.clone())]
            .into_iter()
            .map(|(name, store)| {
                std::thread::spawn(move || {
                    for i in 0..25 {
                        let id = format!("{name}{i}");
                        store.create_task(&id, "t", None, None).unwrap();
                        store.record_step(&step(&id, 1)).unwrap();
                        store.finish_task(&id, &Outcome::Stopped {}).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(a.recent_tasks(100).unwrap().len(), 50);
        assert_eq!(b.task("a24").unwrap().unwrap().status, "stopped");
        assert_eq!(b.steps("b3").unwrap().len(), 1);
    }

    #[test]
    fn refuses_a_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DB_FILE);
        Connection::open(&path).unwrap().pragma_update(None, "user_version", 99).unwrap();
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::TooNew { found: 99, .. }), "{err}");
    }
}
